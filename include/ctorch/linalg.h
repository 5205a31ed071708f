/* ctorch linalg ops. */
#ifndef CTORCH_LINALG_H
#define CTORCH_LINALG_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
