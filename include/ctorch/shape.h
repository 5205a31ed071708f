/* ctorch shape ops. */
#ifndef CTORCH_SHAPE_H
#define CTORCH_SHAPE_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
