/* Ternary elementwise ops: where, lerp, addcmul, addcdiv, clamp with tensor bounds. */
#ifndef CTORCH_TERNARY_H
#define CTORCH_TERNARY_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
