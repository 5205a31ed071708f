"""The convolution layers timed by bench/bench_conv_torch.py: ResNet-18's conv2d shapes
(torchvision's ImageNet layout at 224x224). bench/bench_conv.inc.c holds the same table
(keep the two equal; `python3 bench/bench_conv_layers.py` prints it in the C table's order).
Each row: name C O H W k stride pad (square input and kernel, no bias, as in ResNet-18)."""
LAYERS = [
    # name          C    O    H    W    k  s  p
    ("conv1",       3,   64,  224, 224, 7, 2, 3),
    ("layer1",      64,  64,  56,  56,  3, 1, 1),
    ("layer2_0_c1", 64,  128, 56,  56,  3, 2, 1),
    ("layer2_ds",   64,  128, 56,  56,  1, 2, 0),
    ("layer2",      128, 128, 28,  28,  3, 1, 1),
    ("layer3_0_c1", 128, 256, 28,  28,  3, 2, 1),
    ("layer3_ds",   128, 256, 28,  28,  1, 2, 0),
    ("layer3",      256, 256, 14,  14,  3, 1, 1),
    ("layer4_0_c1", 256, 512, 14,  14,  3, 2, 1),
    ("layer4_ds",   256, 512, 14,  14,  1, 2, 0),
    ("layer4",      512, 512, 7,   7,   3, 1, 1),
]

if __name__ == "__main__":
    for row in LAYERS:
        print(" ".join(str(v) for v in row))
