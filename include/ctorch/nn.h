/* ctorch nn ops. */
#ifndef CTORCH_NN_H
#define CTORCH_NN_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
