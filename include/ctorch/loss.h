/* Loss functions and distance ops. */
#ifndef CTORCH_LOSS_H
#define CTORCH_LOSS_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
