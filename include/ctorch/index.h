/* ctorch index ops. */
#ifndef CTORCH_INDEX_H
#define CTORCH_INDEX_H
#include "core.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
