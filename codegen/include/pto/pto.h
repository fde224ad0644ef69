// pto.h - The umbrella header: everything a ptojit user writes kernels with.
#pragma once

#include "pto/collectives.h"
#include "pto/control.h"
#include "pto/distributed.h"
#include "pto/dtype.h"
#include "pto/error.h"
#include "pto/host_tensor.h"
#include "pto/index_ops.h"
#include "pto/jit.h"
#include "pto/matmul.h"
#include "pto/ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"
#include "pto/sort_ops.h"
#include "pto/symbolic.h"
#include "pto/tensor.h"
#include "pto/tile.h"
