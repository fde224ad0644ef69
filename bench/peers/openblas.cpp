// openblas.cpp - See openblas.h.
#include "peers/openblas.h"

#include <cblas.h>

namespace peer::openblas {

void sgemm(int64_t m, int64_t k, int64_t n, const float *a, const float *b, float *c, int threads) {
  openblas_set_num_threads(threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c,
              static_cast<int>(n));
}

std::string core() { return openblas_get_corename(); }

} // namespace peer::openblas
