/* Forked regions, backend-neutral (src/backend/stream_region.c over backend.h's optional region_begin /
 * region_end). A model marks a stretch of its forward whose launches may run beside the ones after it
 * (src/models/resnet.c: the ResNet downsample branch); the autograd nodes recorded inside carry the region's tag,
 * and the engine runs each maximal run of consecutive nodes of one tag as a backward region. Where the device's
 * backend has no regions (the CPU, WebGPU) nothing is tagged and nothing forks. */
#ifndef CT_STREAM_REGION_H
#define CT_STREAM_REGION_H
#include "backend.h"

/* The forward: begin on on's device (true: call ct_stream_region_end with the same tensor after the region's ops;
 * false: no region, nothing to end); end registers `read` (the region's input, NULL: none) as read by it.
 * One region at a time per thread. */
bool ct_stream_region_begin(const ct_tensor *on);
void ct_stream_region_end(const ct_tensor *on, const ct_tensor *read);
/* The engine: a backward region on dev (true: it forked, ct_stream_region_leave must follow); inside it,
 * ct_stream_region_read registers the gradients a node reads before the node runs (no reference kept). */
bool ct_stream_region_enter(ct_device dev);
void ct_stream_region_read(ct_device dev, int n_read, const ct_tensor *const *read);
bool ct_stream_region_leave(ct_device dev, int n_read, const ct_tensor *const *read);

#endif
