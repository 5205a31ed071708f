#!/usr/bin/env python3
"""ONNX models for the wasm benchmark (issue 8): ResNet-18 and ViT-Tiny/16 at 224x224, batch 1,
exported by PyTorch 1.13 from the torchvision/timm-structured definitions in tests/models_ref.py
(torchvision and timm are not installed here), random weights (inference time does not depend on
the values). Also writes, per model, a fixed input and PyTorch's output, so the benchmark can check
that ONNX Runtime Web computes the same model before it times it.
usage: /usr/bin/python3 bench/wasm_export_onnx.py OUT_DIR   (make wasm-bench-models)"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import models_ref  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "build/wasm-bench/models"
os.makedirs(out, exist_ok=True)
for name, build in (("resnet18", lambda: models_ref.ResNet(num_classes=1000)),
                    ("vit_tiny16", lambda: models_ref.VisionTransformer())):
    torch.manual_seed(0)
    m = build().eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        y = m(x)
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(m, (x,), path, input_names=["x"], output_names=["y"], opset_version=14,
                      do_constant_folding=True)
    with open(os.path.join(out, name + ".check.json"), "w") as f:
        json.dump({"x": x.flatten().tolist(), "y": y.flatten().tolist()}, f)
    print("%s: %d bytes" % (path, os.path.getsize(path)))
