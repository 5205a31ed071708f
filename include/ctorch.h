/* ctorch: PyTorch's semantics in C. The whole public API; see README.md. */
#ifndef CTORCH_H
#define CTORCH_H
#include "ctorch/core.h"
#include "ctorch/autograd.h"
#include "ctorch/creation.h"
#include "ctorch/view.h"
#include "ctorch/unary.h"
#include "ctorch/binary.h"
#include "ctorch/ternary.h"
#include "ctorch/reduce.h"
#include "ctorch/linalg.h"
#include "ctorch/index.h"
#include "ctorch/shape.h"
#include "ctorch/nn.h"
#include "ctorch/loss.h"
#include "ctorch/random.h"
#include "ctorch/dict.h"
#include "ctorch/module.h"
#include "ctorch/optim.h"
#include "ctorch/io.h"
#include "ctorch/vision.h"
#include "ctorch/memory_format.h"
#endif
