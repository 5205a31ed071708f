// The benchmark models and timing loop, shared by the benchmark page (bench.html) and the Node
// script (web/bench_node.mjs). Every model is built from ctorch's nn layers with PyTorch's shapes.
export function makeBench(torch) {
  const { nn } = torch;
  const F = nn.functional;

  class BasicBlock extends nn.Module {
    constructor(inp, out, stride) {
      super();
      this.conv1 = new nn.Conv2d(inp, out, 3, { stride, padding: 1, bias: false });
      this.bn1 = new nn.BatchNorm2d(out);
      this.conv2 = new nn.Conv2d(out, out, 3, { padding: 1, bias: false });
      this.bn2 = new nn.BatchNorm2d(out);
      if (stride !== 1 || inp !== out) this.downsample = new nn.Sequential(new nn.Conv2d(inp, out, 1, { stride, bias: false }), new nn.BatchNorm2d(out));
    }
    forward(x) {
      return torch.scope(() => {
        const y = this.bn2.forward(this.conv2.forward(this.bn1.forward(this.conv1.forward(x)).relu_()));
        return y.add_(this.downsample ? this.downsample.forward(x) : x).relu_();
      });
    }
  }
  class ResNet18 extends nn.Module {
    constructor(classes = 1000) {
      super();
      this.conv1 = new nn.Conv2d(3, 64, 7, { stride: 2, padding: 3, bias: false });
      this.bn1 = new nn.BatchNorm2d(64);
      const layer = (i, o, s) => new nn.Sequential(new BasicBlock(i, o, s), new BasicBlock(o, o, 1));
      this.layer1 = layer(64, 64, 1); this.layer2 = layer(64, 128, 2); this.layer3 = layer(128, 256, 2); this.layer4 = layer(256, 512, 2);
      this.fc = new nn.Linear(512, classes);
    }
    forward(x) {
      return torch.scope(() => {
        let y = F.maxPool2d(this.bn1.forward(this.conv1.forward(x)).relu_(), 3, { stride: 2, padding: 1 });
        for (const l of [this.layer1, this.layer2, this.layer3, this.layer4]) y = l.forward(y);
        return this.fc.forward(F.adaptiveAvgPool2d(y, 1).flatten(1));
      });
    }
  }
  class ViTBlock extends nn.Module {
    constructor(dim, heads) {
      super();
      this.heads = heads;
      this.norm1 = new nn.LayerNorm(dim, { eps: 1e-6 });
      this.qkv = new nn.Linear(dim, 3 * dim);
      this.proj = new nn.Linear(dim, dim);
      this.norm2 = new nn.LayerNorm(dim, { eps: 1e-6 });
      this.fc1 = new nn.Linear(dim, 4 * dim);
      this.fc2 = new nn.Linear(4 * dim, dim);
    }
    forward(x) {
      return torch.scope(() => {
        const [B, N, C] = x.shape, H = this.heads, D = C / H;
        const qkv = this.qkv.forward(this.norm1.forward(x)).view(B, N, 3, H, D).permute(2, 0, 3, 1, 4);
        const [q, k, v] = qkv.unbind(0);
        const a = F.scaledDotProductAttention(q, k, v).transpose(1, 2).reshape(B, N, C);
        const y = x.add(this.proj.forward(a));
        return y.add(this.fc2.forward(F.gelu(this.fc1.forward(this.norm2.forward(y)))));
      });
    }
  }
  class ViTTiny extends nn.Module { // ViT-Tiny/16: 224 input, 192 wide, 12 blocks, 3 heads
    constructor(classes = 1000, dim = 192, depth = 12, heads = 3) {
      super();
      this.patch = new nn.Conv2d(3, dim, 16, { stride: 16 });
      this.cls = nn.Parameter(torch.zeros([1, 1, dim]));
      this.pos = nn.Parameter(torch.randn([1, 197, dim]).mul_(0.02));
      this.blocks = new nn.ModuleList(Array.from({ length: depth }, () => new ViTBlock(dim, heads)));
      this.norm = new nn.LayerNorm(dim, { eps: 1e-6 });
      this.head = new nn.Linear(dim, classes);
    }
    forward(x) {
      return torch.scope(() => {
        const p = this.patch.forward(x).flatten(2).transpose(1, 2);
        let y = torch.cat([this.cls.expand(x.shape[0], -1, -1), p], 1).add(this.pos);
        for (const b of this.blocks) y = b.forward(y);
        return this.head.forward(this.norm.forward(y).select(1, 0));
      });
    }
  }
  const mnistCnn = () => new nn.Sequential(new nn.Conv2d(1, 32, 5), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Conv2d(32, 64, 5), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Flatten(), new nn.Linear(1024, 128), new nn.ReLU(), new nn.Linear(128, 10));

  const now = () => (typeof performance != 'undefined' ? performance.now() : Date.now());
  async function time(fn, { warmup = 2, iters = 5, yieldFn = null } = {}) {
    for (let i = 0; i < warmup; i++) { fn(); if (yieldFn) await yieldFn(); }
    const ts = [];
    for (let i = 0; i < iters; i++) { const t0 = now(); fn(); ts.push(now() - t0); if (yieldFn) await yieldFn(); }
    ts.sort((a, b) => a - b);
    return { median: ts[Math.floor(ts.length / 2)], min: ts[0], times: ts };
  }

  const benches = {
    resnet18: {
      title: 'ResNet-18 inference, batch 1, 224×224',
      setup() { torch.manualSeed(0); const m = new ResNet18().eval(); const x = torch.randn([1, 3, 224, 224]).keep(); return { run: () => torch.noGrad(() => torch.scope(() => { m.forward(x).data(); })), dispose: () => { m.dispose(); x.dispose(); } }; },
      unit: 'ms',
    },
    vit_tiny: {
      title: 'ViT-Tiny/16 inference, batch 1, 224×224',
      setup() { torch.manualSeed(0); const m = new ViTTiny().eval(); const x = torch.randn([1, 3, 224, 224]).keep(); return { run: () => torch.noGrad(() => torch.scope(() => { m.forward(x).data(); })), dispose: () => { m.dispose(); x.dispose(); } }; },
      unit: 'ms',
    },
    mnist_cnn_step: {
      title: 'MNIST CNN training step, batch 64, Adam',
      setup() {
        torch.manualSeed(0);
        const m = mnistCnn(); const params = m.parameters(); const opt = new torch.optim.Adam(params, { lr: 1e-3 }); torch.dispose(params);
        const x = torch.randn([64, 1, 28, 28]).keep(), y = torch.randint(0, 10, [64]).keep();
        return { run: () => torch.scope(() => { opt.zeroGrad(); const l = F.crossEntropy(m.forward(x), y); l.backward(); opt.step(); l.item(); }), dispose: () => { opt.dispose(); m.dispose(); x.dispose(); y.dispose(); } };
      },
      unit: 'ms',
    },
    gpt_step: {
      title: 'byte-level GPT training step (4 layers, 128 wide, context 64, batch 12, AdamW)',
      setup() {
        torch.manualSeed(0);
        const g = new torch.models.GPT({ vocabSize: 256, nPositions: 64, nEmbd: 128, nLayer: 4, nHead: 4 });
        const params = g.parameters(); const opt = new torch.optim.AdamW(params, { lr: 1e-3, weightDecay: 0 }); torch.dispose(params);
        const x = torch.randint(0, 256, [12, 64]).keep(), y = torch.randint(0, 256, [12, 64]).keep();
        return { run: () => torch.scope(() => { opt.zeroGrad(); const { loss } = g.forward(x, y, { logits: false, training: true }); loss.backward(); opt.step(); loss.item(); }), dispose: () => { opt.dispose(); g.dispose(); x.dispose(); y.dispose(); } };
      },
      unit: 'ms', tokensPerStep: 12 * 64,
    },
  };
  async function run(name, opts = {}) {
    const b = benches[name];
    const s = b.setup();
    try {
      const r = await time(s.run, opts);
      const out = { name, title: b.title, ms: r.median, minMs: r.min, times: r.times };
      if (b.tokensPerStep) out.tokensPerSecond = b.tokensPerStep / (r.median / 1000);
      return out;
    } finally { s.dispose(); }
  }
  return { benches, run, models: { ResNet18, ViTTiny, mnistCnn } };
}
