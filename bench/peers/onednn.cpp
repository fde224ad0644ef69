// onednn.cpp - See onednn.h. oneDNN 2.x API (Debian 12 ships 2.6).
#include "peers/onednn.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

// OpenMP's own entry point (libgomp, which oneDNN is built on), declared here: GCC 12's omp.h
// does not parse with clang-tidy.
extern "C" void omp_set_num_threads(int n);

namespace peer::onednn {

using dnnl::memory;
using tag = memory::format_tag;

struct Op::Impl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
};

namespace {

memory::desc md(const memory::dims &dims, bool bf16) {
  return {dims, bf16 ? memory::data_type::bf16 : memory::data_type::f32, tag::ab};
}

memory mem(const std::shared_ptr<Op::Impl> &p, const memory::desc &d, const void *ptr) {
  return {d, p->eng, const_cast<void *>(ptr)};
}

} // namespace

Op Op::softmax(bool bf16, int64_t rows, int64_t cols, const void *x, void *y) {
  Op op;
  op.impl_ = std::make_shared<Impl>();
  auto d = md({rows, cols}, bf16);
  dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, d, 1);
  op.impl_->prim = dnnl::softmax_forward({desc, op.impl_->eng});
  op.impl_->args = {{DNNL_ARG_SRC, mem(op.impl_, d, x)}, {DNNL_ARG_DST, mem(op.impl_, d, y)}};
  return op;
}

Op Op::layer_norm(int64_t rows, int64_t cols, const float *x, float *y, float eps) {
  Op op;
  op.impl_ = std::make_shared<Impl>();
  auto d = md({rows, cols}, false);
  dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, d, eps,
                                               dnnl::normalization_flags::none);
  dnnl::layer_normalization_forward::primitive_desc pd(desc, op.impl_->eng);
  op.impl_->prim = dnnl::layer_normalization_forward(pd);
  op.impl_->args = {{DNNL_ARG_SRC, mem(op.impl_, d, x)}, {DNNL_ARG_DST, mem(op.impl_, d, y)}};
  return op;
}

Op Op::matmul(bool bf16, int64_t m, int64_t k, int64_t n, const void *a, const void *b, float *c) {
  Op op;
  op.impl_ = std::make_shared<Impl>();
  auto da = md({m, k}, bf16), db = md({k, n}, bf16), dc = md({m, n}, false);
  dnnl::matmul::desc desc(da, db, dc);
  op.impl_->prim = dnnl::matmul({desc, op.impl_->eng});
  op.impl_->args = {{DNNL_ARG_SRC, mem(op.impl_, da, a)},
                    {DNNL_ARG_WEIGHTS, mem(op.impl_, db, b)},
                    {DNNL_ARG_DST, mem(op.impl_, dc, c)}};
  return op;
}

Op Op::add(int64_t rows, int64_t cols, const float *x, const float *y, float *z) {
  Op op;
  op.impl_ = std::make_shared<Impl>();
  auto d = md({rows, cols}, false);
  dnnl::binary::desc desc(dnnl::algorithm::binary_add, d, d, d);
  op.impl_->prim = dnnl::binary({desc, op.impl_->eng});
  op.impl_->args = {{DNNL_ARG_SRC_0, mem(op.impl_, d, x)},
                    {DNNL_ARG_SRC_1, mem(op.impl_, d, y)},
                    {DNNL_ARG_DST, mem(op.impl_, d, z)}};
  return op;
}

void Op::run(int threads) const {
  omp_set_num_threads(threads);
  impl_->prim.execute(impl_->strm, impl_->args);
  impl_->strm.wait();
}

std::string isa() {
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx2:
    return "avx2";
  default:
    return "other";
  }
}

} // namespace peer::onednn
