// The part of the modern webgpu.h C API that the WebGPU backend calls (wgpu_abi.h), implemented
// on navigator.gpu for the browser build (an emscripten --js-library; emscripten 3.1.6 carries
// only the 2022 draft of webgpu.h). Same ABI as the C declarations, in wasm32: pointers and
// size_t are 4 bytes, uint64 fields 8-byte aligned, structs passed by value arrive as a pointer
// to a copy, uint64 arguments arrive as (low, high) pairs, uint64 results are ignored by the C
// side (futures). The offsets below are checked against offsetof() by the browser test
// (web/webgpu/wg_browser.c, ctwg_shim_offset).
//
// Objects are small integer handles into WGPUShim.objs. Asynchronous results (adapter, device,
// buffer maps, queue work done, error scopes, uncaptured errors) wait in WGPUShim.ready and are
// delivered by wgpuInstanceProcessEvents, which the C side calls while it waits; when nothing is
// ready it yields to the browser's event loop through ASYNCIFY (the link lists it in
// ASYNCIFY_IMPORTS), so C code never runs from a promise handler.

mergeInto(LibraryManager.library, {
  $WGPUShim__deps: ['malloc', 'free'], // getWasmTableEntry: always in the runtime (internal: not a dep)
  $WGPUShim: {
    objs: [null],
    freeIds: [],
    ready: [],          // callbacks to deliver: functions
    inflight: 0,        // promises not settled yet
    wakers: [],
    toDestroy: [],      // buffers released since the last submit
    // byte offsets (wasm32) of the struct fields the shim reads or writes
    off: {
      StringView: { data: 0, length: 4, size: 8 },
      ChainedStruct: { next: 0, sType: 4 },
      CallbackInfo: { mode: 4, callback: 8, userdata1: 12, userdata2: 16, size: 20 },
      UncapturedErrorCallbackInfo: { callback: 4, userdata1: 8, userdata2: 12, size: 16 },
      DeviceDescriptor: { requiredFeatureCount: 12, requiredFeatures: 16, requiredLimits: 20,
                          deviceLostCallbackInfo: 36, uncapturedErrorCallbackInfo: 56, size: 72 },
      AdapterInfo: { vendor: 4, architecture: 12, device: 20, description: 28, backendType: 36,
                     adapterType: 40, vendorID: 44, deviceID: 48, subgroupMinSize: 52, subgroupMaxSize: 56, size: 60 },
      BufferDescriptor: { usage: 16, size: 24, mappedAtCreation: 32, size_: 40 },
      ShaderSourceWGSL: { code: 8 },
      ComputePipelineDescriptor: { layout: 12, module: 20, entryPoint: 24, constantCount: 32 },
      BindGroupEntry: { binding: 4, buffer: 8, offset: 16, size: 24, size_: 40 },
      BindGroupDescriptor: { layout: 12, entryCount: 16, entries: 20 },
    },
    // WGPULimits: [name, offset, 32 or 64 bits]
    limits: [
      ['maxTextureDimension1D', 4, 32], ['maxTextureDimension2D', 8, 32], ['maxTextureDimension3D', 12, 32],
      ['maxTextureArrayLayers', 16, 32], ['maxBindGroups', 20, 32], ['maxBindGroupsPlusVertexBuffers', 24, 32],
      ['maxBindingsPerBindGroup', 28, 32], ['maxDynamicUniformBuffersPerPipelineLayout', 32, 32],
      ['maxDynamicStorageBuffersPerPipelineLayout', 36, 32], ['maxSampledTexturesPerShaderStage', 40, 32],
      ['maxSamplersPerShaderStage', 44, 32], ['maxStorageBuffersPerShaderStage', 48, 32],
      ['maxStorageTexturesPerShaderStage', 52, 32], ['maxUniformBuffersPerShaderStage', 56, 32],
      ['maxUniformBufferBindingSize', 64, 64], ['maxStorageBufferBindingSize', 72, 64],
      ['minUniformBufferOffsetAlignment', 80, 32], ['minStorageBufferOffsetAlignment', 84, 32],
      ['maxVertexBuffers', 88, 32], ['maxBufferSize', 96, 64], ['maxVertexAttributes', 104, 32],
      ['maxVertexBufferArrayStride', 108, 32], ['maxInterStageShaderVariables', 112, 32],
      ['maxColorAttachments', 116, 32], ['maxColorAttachmentBytesPerSample', 120, 32],
      ['maxComputeWorkgroupStorageSize', 124, 32], ['maxComputeInvocationsPerWorkgroup', 128, 32],
      ['maxComputeWorkgroupSizeX', 132, 32], ['maxComputeWorkgroupSizeY', 136, 32],
      ['maxComputeWorkgroupSizeZ', 140, 32], ['maxComputeWorkgroupsPerDimension', 144, 32],
      ['maxImmediateSize', 148, 32],
    ],
    LIMITS_SIZE: 152,

    add: function(o) {
      var id = WGPUShim.freeIds.length ? WGPUShim.freeIds.pop() : WGPUShim.objs.length;
      WGPUShim.objs[id] = o;
      return id;
    },
    get: function(id) { return WGPUShim.objs[id]; },
    drop: function(id) {
      if (id && WGPUShim.objs[id] !== undefined && WGPUShim.objs[id] !== null) {
        WGPUShim.objs[id] = null;
        WGPUShim.freeIds.push(id);
      }
    },
    u32: function(p) { return HEAPU32[p >> 2] >>> 0; },
    u64: function(p) { return (HEAPU32[p >> 2] >>> 0) + (HEAPU32[(p + 4) >> 2] >>> 0) * 4294967296; },
    setU32: function(p, v) { HEAPU32[p >> 2] = v >>> 0; },
    setU64: function(p, v) {
      HEAPU32[p >> 2] = v % 4294967296;
      HEAPU32[(p + 4) >> 2] = Math.floor(v / 4294967296);
    },
    // a WGPUStringView at p as a JS string
    str: function(p) {
      var data = WGPUShim.u32(p), len = WGPUShim.u32(p + 4);
      if (!data) return '';
      return len === 0xFFFFFFFF ? UTF8ToString(data) : UTF8ToString(data, len);
    },
    // a malloc'd UTF-8 copy of s (freed by the caller)
    cstr: function(s) {
      var n = lengthBytesUTF8(s) + 1, p = _malloc(n);
      stringToUTF8(s, p, n);
      return p;
    },
    // calls a C callback with a WGPUStringView of msg in place of argument `at`
    callWithMessage: function(fn, args, at, msg) {
      var sv = _malloc(8), s = WGPUShim.cstr(msg || '');
      WGPUShim.setU32(sv, s);
      WGPUShim.setU32(sv + 4, lengthBytesUTF8(msg || ''));
      args.splice(at, 0, sv);
      try { getWasmTableEntry(fn).apply(null, args); } finally { _free(s); _free(sv); }
    },
    // the callback info at p: {fn, u1, u2}
    cbinfo: function(p, o) {
      o = o || WGPUShim.off.CallbackInfo;
      return { fn: WGPUShim.u32(p + o.callback), u1: WGPUShim.u32(p + o.userdata1), u2: WGPUShim.u32(p + o.userdata2) };
    },
    // a promise whose result is delivered as a callback at the next wgpuInstanceProcessEvents
    track: function(promise, onOk, onErr) {
      WGPUShim.inflight++;
      promise.then(function(v) { WGPUShim.settle(function() { onOk(v); }); },
                   function(e) { WGPUShim.settle(function() { onErr(e); }); });
    },
    settle: function(deliver) {
      WGPUShim.inflight--;
      WGPUShim.ready.push(deliver);
      WGPUShim.wake();
    },
    wake: function() {
      var w = WGPUShim.wakers;
      WGPUShim.wakers = [];
      for (var i = 0; i < w.length; i++) w[i]();
    },
    deliver: function() {
      while (WGPUShim.ready.length) WGPUShim.ready.shift()();
    },
    errorType: function(e) {
      if (!e) return 1;                                         // NoError
      if (typeof GPUValidationError !== 'undefined' && e instanceof GPUValidationError) return 2;
      if (typeof GPUOutOfMemoryError !== 'undefined' && e instanceof GPUOutOfMemoryError) return 3;
      return 4;                                                 // Internal
    },
    features: { 0x0A: 'shader-f16', 0x11: 'subgroups' },
    writeLimits: function(p, lim) {
      var L = WGPUShim.limits;
      for (var i = 0; i < L.length; i++) {
        var v = lim[L[i][0]];
        if (v === undefined) v = 0;
        if (L[i][2] === 64) WGPUShim.setU64(p + L[i][1], v); else WGPUShim.setU32(p + L[i][1], v);
      }
    },
  },

  wgpuCreateInstance__deps: ['$WGPUShim'],
  wgpuCreateInstance: function(desc) {
    return WGPUShim.add({ kind: 'instance' });
  },
  wgpuInstanceRelease: function(id) { WGPUShim.drop(id); },

  // The adapter: navigator.gpu.requestAdapter(); null (WebGPU disabled, no GPU) is a failed
  // request with a message saying why, which the C side turns into its fallback reason.
  wgpuInstanceRequestAdapter__deps: ['$WGPUShim'],
  wgpuInstanceRequestAdapter: function(inst, opts, info) {
    var cb = WGPUShim.cbinfo(info);
    var gpu = typeof navigator !== 'undefined' ? navigator.gpu : undefined;
    var fail = function(msg) { WGPUShim.callWithMessage(cb.fn, [3 /* Unavailable */, 0, cb.u1, cb.u2], 2, msg); };
    if (!gpu) {
      WGPUShim.ready.push(function() { fail('this browser has no navigator.gpu' + (typeof isSecureContext !== 'undefined' && !isSecureContext ? ' (the page is not a secure context)' : '')); });
      return 0;
    }
    var p;
    try { p = gpu.requestAdapter({ powerPreference: 'high-performance' }); } catch (e) { p = Promise.reject(e); }
    WGPUShim.track(p, function(a) {
      if (!a) { fail('navigator.gpu.requestAdapter() returned null: WebGPU is disabled or no GPU is usable'); return; }
      WGPUShim.callWithMessage(cb.fn, [1, WGPUShim.add({ kind: 'adapter', a: a }), cb.u1, cb.u2], 2, '');
    }, function(e) { fail('navigator.gpu.requestAdapter() failed: ' + e); });
    return 0;
  },

  // Delivers what is ready; with nothing ready, sleeps (ASYNCIFY) until a promise settles.
  wgpuInstanceProcessEvents__deps: ['$WGPUShim', '$Asyncify'],
  wgpuInstanceProcessEvents: function(inst) {
    if (Asyncify.state === Asyncify.State.Normal && WGPUShim.ready.length) {
      WGPUShim.deliver();
      return;
    }
    Asyncify.handleSleep(function(wakeUp) {
      if (WGPUShim.ready.length) { wakeUp(); return; }
      var done = false, once = function() { if (!done) { done = true; wakeUp(); } };
      WGPUShim.wakers.push(once);
      // nothing in flight: still give the event loop a turn (the C side times out)
      if (!WGPUShim.inflight) setTimeout(once, 1);
    });
    if (Asyncify.state === Asyncify.State.Normal) WGPUShim.deliver();
  },
  wgpuInstanceWaitAny: function(inst, count, infos, tlo, thi) { return 3; /* Error: not used here */ },

  wgpuAdapterGetInfo__deps: ['$WGPUShim'],
  wgpuAdapterGetInfo: function(id, p) {
    var a = WGPUShim.get(id).a, info = a.info || {}, o = WGPUShim.off.AdapterInfo;
    var put = function(at, s) {
      s = s || '';
      WGPUShim.setU32(p + at, WGPUShim.cstr(s));
      WGPUShim.setU32(p + at + 4, lengthBytesUTF8(s));
    };
    put(o.vendor, info.vendor);
    put(o.architecture, info.architecture);
    put(o.device, info.device || (info.vendor ? info.vendor + ' ' + (info.architecture || '') : 'WebGPU adapter'));
    put(o.description, info.description);
    WGPUShim.setU32(p + o.backendType, 2); /* WGPUBackendType_WebGPU */
    var cpu = a.isFallbackAdapter || info.isFallbackAdapter || /swiftshader/i.test((info.architecture || '') + (info.description || ''));
    WGPUShim.setU32(p + o.adapterType, cpu ? 3 : 4);
    WGPUShim.setU32(p + o.vendorID, 0);
    WGPUShim.setU32(p + o.deviceID, 0);
    WGPUShim.setU32(p + o.subgroupMinSize, info.subgroupMinSize || 0);
    WGPUShim.setU32(p + o.subgroupMaxSize, info.subgroupMaxSize || 0);
    return 1;
  },
  wgpuAdapterInfoFreeMembers__deps: ['$WGPUShim'],
  wgpuAdapterInfoFreeMembers: function(p) { // the struct by value: a pointer to a copy
    var o = WGPUShim.off.AdapterInfo;
    [o.vendor, o.architecture, o.device, o.description].forEach(function(at) {
      var d = WGPUShim.u32(p + at);
      if (d) _free(d);
    });
  },
  wgpuAdapterGetLimits__deps: ['$WGPUShim'],
  wgpuAdapterGetLimits: function(id, p) { WGPUShim.writeLimits(p, WGPUShim.get(id).a.limits); return 1; },
  wgpuAdapterHasFeature__deps: ['$WGPUShim'],
  wgpuAdapterHasFeature: function(id, f) {
    var name = WGPUShim.features[f];
    return name && WGPUShim.get(id).a.features.has(name) ? 1 : 0;
  },

  wgpuAdapterRequestDevice__deps: ['$WGPUShim'],
  wgpuAdapterRequestDevice: function(id, desc, info) {
    var a = WGPUShim.get(id).a, cb = WGPUShim.cbinfo(info), o = WGPUShim.off.DeviceDescriptor;
    var d = { requiredFeatures: [], requiredLimits: {} };
    var lost = null, uncaptured = null;
    if (desc) {
      var nf = WGPUShim.u32(desc + o.requiredFeatureCount), fp = WGPUShim.u32(desc + o.requiredFeatures);
      for (var i = 0; i < nf; i++) {
        var name = WGPUShim.features[WGPUShim.u32(fp + 4 * i)];
        if (name) d.requiredFeatures.push(name);
      }
      var lp = WGPUShim.u32(desc + o.requiredLimits);
      if (lp) {
        var L = WGPUShim.limits;
        for (var k = 0; k < L.length; k++) {
          var name2 = L[k][0], at = lp + L[k][1];
          if (!(name2 in a.limits)) continue;
          if (L[k][2] === 64) {
            if (WGPUShim.u32(at) === 0xFFFFFFFF && WGPUShim.u32(at + 4) === 0xFFFFFFFF) continue; // undefined
            d.requiredLimits[name2] = WGPUShim.u64(at);
          } else {
            if (WGPUShim.u32(at) === 0xFFFFFFFF) continue;
            d.requiredLimits[name2] = WGPUShim.u32(at);
          }
        }
      }
      lost = WGPUShim.cbinfo(desc + o.deviceLostCallbackInfo);
      uncaptured = WGPUShim.cbinfo(desc + o.uncapturedErrorCallbackInfo, WGPUShim.off.UncapturedErrorCallbackInfo);
    }
    var p;
    try { p = a.requestDevice(d); } catch (e) { p = Promise.reject(e); }
    WGPUShim.track(p, function(dev) {
      var did = WGPUShim.add({ kind: 'device', d: dev });
      var self = _malloc(4); // the callbacks get a const WGPUDevice *
      WGPUShim.setU32(self, did);
      WGPUShim.get(did).self = self;
      if (uncaptured && uncaptured.fn) {
        dev.addEventListener('uncapturederror', function(ev) {
          var e = ev.error;
          WGPUShim.ready.push(function() {
            WGPUShim.callWithMessage(uncaptured.fn, [self, WGPUShim.errorType(e), uncaptured.u1, uncaptured.u2], 2, e && e.message);
          });
          WGPUShim.wake();
        });
      }
      if (lost && lost.fn) {
        dev.lost.then(function(li) {
          var reason = li && li.reason === 'destroyed' ? 2 : 1;
          WGPUShim.ready.push(function() {
            WGPUShim.callWithMessage(lost.fn, [self, reason, lost.u1, lost.u2], 2, li && li.message);
          });
          WGPUShim.wake();
        });
      }
      WGPUShim.callWithMessage(cb.fn, [1, did, cb.u1, cb.u2], 2, '');
    }, function(e) {
      WGPUShim.callWithMessage(cb.fn, [3 /* Error */, 0, cb.u1, cb.u2], 2, 'requestDevice failed: ' + e);
    });
    return 0;
  },
  wgpuAdapterRelease__deps: ['$WGPUShim'],
  wgpuAdapterRelease: function(id) { WGPUShim.drop(id); },

  wgpuDeviceGetLimits__deps: ['$WGPUShim'],
  wgpuDeviceGetLimits: function(id, p) { WGPUShim.writeLimits(p, WGPUShim.get(id).d.limits); return 1; },
  wgpuDeviceGetQueue__deps: ['$WGPUShim'],
  wgpuDeviceGetQueue: function(id) { return WGPUShim.add({ kind: 'queue', q: WGPUShim.get(id).d.queue }); },

  wgpuDeviceCreateBuffer__deps: ['$WGPUShim'],
  wgpuDeviceCreateBuffer: function(id, desc) {
    var o = WGPUShim.off.BufferDescriptor;
    var usage = WGPUShim.u32(desc + o.usage), size = WGPUShim.u64(desc + o.size);
    var mapped = WGPUShim.u32(desc + o.mappedAtCreation) !== 0;
    try {
      var b = WGPUShim.get(id).d.createBuffer({ usage: usage, size: size, mappedAtCreation: mapped });
      return WGPUShim.add({ kind: 'buffer', b: b, ranges: [] });
    } catch (e) {
      return 0; // a size the browser refuses outright: NULL, as the C side expects
    }
  },
  wgpuDeviceCreateShaderModule__deps: ['$WGPUShim'],
  wgpuDeviceCreateShaderModule: function(id, desc) {
    var chain = WGPUShim.u32(desc); // nextInChain: the WGSL source
    if (!chain || WGPUShim.u32(chain + WGPUShim.off.ChainedStruct.sType) !== 2) return 0;
    var code = WGPUShim.str(chain + WGPUShim.off.ShaderSourceWGSL.code);
    return WGPUShim.add({ kind: 'module', m: WGPUShim.get(id).d.createShaderModule({ code: code }) });
  },
  wgpuDeviceCreateComputePipeline__deps: ['$WGPUShim'],
  wgpuDeviceCreateComputePipeline: function(id, desc) {
    var o = WGPUShim.off.ComputePipelineDescriptor, lay = WGPUShim.u32(desc + o.layout);
    if (WGPUShim.u32(desc + o.constantCount)) return 0; // no override constants in this subset
    var p = WGPUShim.get(id).d.createComputePipeline({
      layout: lay ? WGPUShim.get(lay).l : 'auto',
      compute: { module: WGPUShim.get(WGPUShim.u32(desc + o.module)).m, entryPoint: WGPUShim.str(desc + o.entryPoint) },
    });
    return WGPUShim.add({ kind: 'pipeline', p: p });
  },
  wgpuDeviceCreateBindGroup__deps: ['$WGPUShim'],
  wgpuDeviceCreateBindGroup: function(id, desc) {
    var o = WGPUShim.off.BindGroupDescriptor, e = WGPUShim.off.BindGroupEntry;
    var n = WGPUShim.u32(desc + o.entryCount), ep = WGPUShim.u32(desc + o.entries), entries = [];
    for (var i = 0; i < n; i++) {
      var p = ep + i * e.size_, r = { buffer: WGPUShim.get(WGPUShim.u32(p + e.buffer)).b, offset: WGPUShim.u64(p + e.offset) };
      if (!(WGPUShim.u32(p + e.size) === 0xFFFFFFFF && WGPUShim.u32(p + e.size + 4) === 0xFFFFFFFF)) r.size = WGPUShim.u64(p + e.size);
      entries.push({ binding: WGPUShim.u32(p + e.binding), resource: r });
    }
    var bg = WGPUShim.get(id).d.createBindGroup({ layout: WGPUShim.get(WGPUShim.u32(desc + o.layout)).l, entries: entries });
    return WGPUShim.add({ kind: 'bindgroup', g: bg });
  },
  wgpuDeviceCreateCommandEncoder__deps: ['$WGPUShim'],
  wgpuDeviceCreateCommandEncoder: function(id, desc) {
    return WGPUShim.add({ kind: 'encoder', e: WGPUShim.get(id).d.createCommandEncoder() });
  },
  wgpuDevicePushErrorScope__deps: ['$WGPUShim'],
  wgpuDevicePushErrorScope: function(id, filter) {
    WGPUShim.get(id).d.pushErrorScope(filter === 2 ? 'out-of-memory' : filter === 3 ? 'internal' : 'validation');
  },
  wgpuDevicePopErrorScope__deps: ['$WGPUShim'],
  wgpuDevicePopErrorScope: function(id, info) {
    var cb = WGPUShim.cbinfo(info);
    WGPUShim.track(WGPUShim.get(id).d.popErrorScope(), function(e) {
      WGPUShim.callWithMessage(cb.fn, [1, WGPUShim.errorType(e), cb.u1, cb.u2], 2, e ? e.message : '');
    }, function(err) {
      WGPUShim.callWithMessage(cb.fn, [3 /* Error */, 1, cb.u1, cb.u2], 2, String(err));
    });
    return 0;
  },
  wgpuDeviceDestroy__deps: ['$WGPUShim'],
  wgpuDeviceDestroy: function(id) { WGPUShim.get(id).d.destroy(); },
  wgpuDeviceRelease__deps: ['$WGPUShim'],
  wgpuDeviceRelease: function(id) { WGPUShim.drop(id); },

  // A submit also retires the buffers released before it: destroyed once the queue is past it.
  wgpuQueueSubmit__deps: ['$WGPUShim'],
  wgpuQueueSubmit: function(id, n, cmds) {
    var q = WGPUShim.get(id).q, list = [];
    for (var i = 0; i < n; i++) list.push(WGPUShim.get(WGPUShim.u32(cmds + 4 * i)).c);
    q.submit(list);
    if (WGPUShim.toDestroy.length) {
      var old = WGPUShim.toDestroy;
      WGPUShim.toDestroy = [];
      q.onSubmittedWorkDone().then(function() { old.forEach(function(b) { b.destroy(); }); });
    }
  },
  wgpuQueueWriteBuffer__deps: ['$WGPUShim'],
  wgpuQueueWriteBuffer: function(id, buf, offLo, offHi, data, size) {
    WGPUShim.get(id).q.writeBuffer(WGPUShim.get(buf).b, offLo + offHi * 4294967296, HEAPU8, data, size);
  },
  wgpuQueueOnSubmittedWorkDone__deps: ['$WGPUShim'],
  wgpuQueueOnSubmittedWorkDone: function(id, info) {
    var cb = WGPUShim.cbinfo(info);
    WGPUShim.track(WGPUShim.get(id).q.onSubmittedWorkDone(), function() {
      WGPUShim.callWithMessage(cb.fn, [1, cb.u1, cb.u2], 1, '');
    }, function(e) {
      WGPUShim.callWithMessage(cb.fn, [3 /* Error */, cb.u1, cb.u2], 1, String(e));
    });
    return 0;
  },
  wgpuQueueRelease__deps: ['$WGPUShim'],
  wgpuQueueRelease: function(id) { WGPUShim.drop(id); },

  // Mapping: the C side sees a copy in the wasm heap; a write range goes back on unmap.
  wgpuBufferMapAsync__deps: ['$WGPUShim'],
  wgpuBufferMapAsync: function(id, modeLo, modeHi, offset, size, info) {
    var cb = WGPUShim.cbinfo(info), b = WGPUShim.get(id).b;
    var p;
    try { p = b.mapAsync(modeLo & 2 ? GPUMapMode.WRITE : GPUMapMode.READ, offset, size); } catch (e) { p = Promise.reject(e); }
    WGPUShim.track(p, function() {
      WGPUShim.callWithMessage(cb.fn, [1, cb.u1, cb.u2], 1, '');
    }, function(e) {
      WGPUShim.callWithMessage(cb.fn, [3 /* Error */, cb.u1, cb.u2], 1, 'mapAsync failed: ' + e);
    });
    return 0;
  },
  wgpuBufferGetConstMappedRange__deps: ['$WGPUShim'],
  wgpuBufferGetConstMappedRange: function(id, offset, size) {
    var o = WGPUShim.get(id), ab;
    try { ab = o.b.getMappedRange(offset, size); } catch (e) { return 0; }
    var p = _malloc(Math.max(size, 1));
    if (!p) return 0;
    HEAPU8.set(new Uint8Array(ab), p);
    o.ranges.push({ p: p, ab: ab, write: false });
    return p;
  },
  wgpuBufferGetMappedRange__deps: ['$WGPUShim'],
  wgpuBufferGetMappedRange: function(id, offset, size) {
    var o = WGPUShim.get(id), ab;
    try { ab = o.b.getMappedRange(offset, size); } catch (e) { return 0; }
    var p = _malloc(Math.max(size, 1));
    if (!p) return 0;
    HEAPU8.set(new Uint8Array(ab), p);
    o.ranges.push({ p: p, ab: ab, write: true });
    return p;
  },
  wgpuBufferUnmap__deps: ['$WGPUShim'],
  wgpuBufferUnmap: function(id) {
    var o = WGPUShim.get(id);
    o.ranges.forEach(function(r) {
      if (r.write) new Uint8Array(r.ab).set(HEAPU8.subarray(r.p, r.p + r.ab.byteLength));
      _free(r.p);
    });
    o.ranges = [];
    o.b.unmap();
  },
  wgpuBufferDestroy__deps: ['$WGPUShim'],
  wgpuBufferDestroy: function(id) { WGPUShim.get(id).b.destroy(); },
  wgpuBufferRelease__deps: ['$WGPUShim'],
  wgpuBufferRelease: function(id) {
    var o = WGPUShim.get(id);
    if (o) {
      o.ranges.forEach(function(r) { _free(r.p); });
      WGPUShim.toDestroy.push(o.b); // recorded work may still use it: destroyed after the next submit
    }
    WGPUShim.drop(id);
  },

  wgpuShaderModuleRelease__deps: ['$WGPUShim'],
  wgpuShaderModuleRelease: function(id) { WGPUShim.drop(id); },
  wgpuComputePipelineGetBindGroupLayout__deps: ['$WGPUShim'],
  wgpuComputePipelineGetBindGroupLayout: function(id, index) {
    return WGPUShim.add({ kind: 'bgl', l: WGPUShim.get(id).p.getBindGroupLayout(index) });
  },
  wgpuComputePipelineRelease__deps: ['$WGPUShim'],
  wgpuComputePipelineRelease: function(id) { WGPUShim.drop(id); },
  wgpuBindGroupLayoutRelease__deps: ['$WGPUShim'],
  wgpuBindGroupLayoutRelease: function(id) { WGPUShim.drop(id); },
  wgpuBindGroupRelease__deps: ['$WGPUShim'],
  wgpuBindGroupRelease: function(id) { WGPUShim.drop(id); },

  wgpuCommandEncoderBeginComputePass__deps: ['$WGPUShim'],
  wgpuCommandEncoderBeginComputePass: function(id, desc) {
    return WGPUShim.add({ kind: 'pass', p: WGPUShim.get(id).e.beginComputePass() });
  },
  wgpuCommandEncoderCopyBufferToBuffer__deps: ['$WGPUShim'],
  wgpuCommandEncoderCopyBufferToBuffer: function(id, src, soLo, soHi, dst, doLo, doHi, nLo, nHi) {
    WGPUShim.get(id).e.copyBufferToBuffer(WGPUShim.get(src).b, soLo + soHi * 4294967296, WGPUShim.get(dst).b,
                                          doLo + doHi * 4294967296, nLo + nHi * 4294967296);
  },
  wgpuCommandEncoderFinish__deps: ['$WGPUShim'],
  wgpuCommandEncoderFinish: function(id, desc) {
    return WGPUShim.add({ kind: 'commands', c: WGPUShim.get(id).e.finish() });
  },
  wgpuCommandEncoderRelease__deps: ['$WGPUShim'],
  wgpuCommandEncoderRelease: function(id) { WGPUShim.drop(id); },
  wgpuCommandBufferRelease__deps: ['$WGPUShim'],
  wgpuCommandBufferRelease: function(id) { WGPUShim.drop(id); },

  wgpuComputePassEncoderSetPipeline__deps: ['$WGPUShim'],
  wgpuComputePassEncoderSetPipeline: function(id, pipe) { WGPUShim.get(id).p.setPipeline(WGPUShim.get(pipe).p); },
  wgpuComputePassEncoderSetBindGroup__deps: ['$WGPUShim'],
  wgpuComputePassEncoderSetBindGroup: function(id, index, bg, n, offsets) {
    var dyn = [];
    for (var i = 0; i < n; i++) dyn.push(WGPUShim.u32(offsets + 4 * i));
    WGPUShim.get(id).p.setBindGroup(index, bg ? WGPUShim.get(bg).g : null, dyn);
  },
  wgpuComputePassEncoderDispatchWorkgroups__deps: ['$WGPUShim'],
  wgpuComputePassEncoderDispatchWorkgroups: function(id, x, y, z) { WGPUShim.get(id).p.dispatchWorkgroups(x, y, z); },
  wgpuComputePassEncoderEnd__deps: ['$WGPUShim'],
  wgpuComputePassEncoderEnd: function(id) { WGPUShim.get(id).p.end(); },
  wgpuComputePassEncoderRelease__deps: ['$WGPUShim'],
  wgpuComputePassEncoderRelease: function(id) { WGPUShim.drop(id); },

  // For the browser test: the shim's offset of a field, to compare with offsetof() in C.
  ctwg_shim_offset__deps: ['$WGPUShim'],
  ctwg_shim_offset: function(structName, fieldName) {
    var s = UTF8ToString(structName), f = UTF8ToString(fieldName);
    if (s === 'Limits') {
      if (f === 'size') return WGPUShim.LIMITS_SIZE;
      for (var i = 0; i < WGPUShim.limits.length; i++) if (WGPUShim.limits[i][0] === f) return WGPUShim.limits[i][1];
      return -1;
    }
    var t = WGPUShim.off[s];
    return t && t[f] !== undefined ? t[f] : -1;
  },
});
