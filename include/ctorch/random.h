/* ctorch random ops. */
#ifndef CTORCH_RANDOM_H
#define CTORCH_RANDOM_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
