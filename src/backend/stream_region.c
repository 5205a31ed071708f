/* Forked regions (stream_region.h): the backend's optional region_begin / region_end, and the region tag
 * the autograd nodes recorded inside a forward region carry (src/autograd/node.c). */
#include "stream_region.h"
#include "../autograd/autograd.h"

static _Thread_local struct {
  bool active, forked;
  ct_device dev;
} fw;
static uint32_t next_tag;

bool ct_stream_region_begin(const ct_tensor *on) {
  if (!on || fw.active) return false;
  ct_device dev = on->storage->device;
  const ct_backend *be = ct_backend_for(dev.type);
  if (!be || !be->region_begin) return false;
  /* the tag is set even where the forward does not fork (its switch off, say): the backward decides on its own */
  uint32_t tag = __atomic_add_fetch(&next_tag, 1, __ATOMIC_RELAXED);
  if (!tag) tag = __atomic_add_fetch(&next_tag, 1, __ATOMIC_RELAXED);
  fw.active = true;
  fw.dev = dev;
  fw.forked = be->region_begin(dev.index, CT_REGION_FORWARD);
  ct_autograd_set_region(tag, dev);
  return true;
}

void ct_stream_region_end(const ct_tensor *on, const ct_tensor *read) {
  (void)on;
  if (!fw.active) return;
  fw.active = false;
  ct_autograd_set_region(0, fw.dev);
  if (fw.forked) {
    const ct_backend *be = ct_backend_for(fw.dev.type);
    be->region_end(fw.dev.index, read ? 1 : 0, &read);
  }
}

bool ct_stream_region_enter(ct_device dev) {
  const ct_backend *be = ct_backend_for(dev.type);
  return be && be->region_begin && be->region_begin(dev.index, CT_REGION_BACKWARD);
}

void ct_stream_region_read(ct_device dev, int n_read, const ct_tensor *const *read) {
  const ct_backend *be = ct_backend_for(dev.type);
  if (be && be->region_read) be->region_read(dev.index, n_read, read);
}

bool ct_stream_region_leave(ct_device dev, int n_read, const ct_tensor *const *read) {
  const ct_backend *be = ct_backend_for(dev.type);
  return be && be->region_end && be->region_end(dev.index, n_read, read);
}
