// printer.cpp - The stable text form of a program, and its structural hash.
#include "pto/ir/printer.h"

#include <fmt/format.h>

namespace pto::ir {
namespace {

const char *kind_name(ValueKind k) {
  switch (k) {
  case ValueKind::Param:
    return "param";
  case ValueKind::Local:
    return "local";
  case ValueKind::View:
    return "view";
  case ValueKind::ShmemData:
    return "shmem";
  case ValueKind::Token:
    return "token";
  }
  return "?";
}

std::string ints(const std::vector<int64_t> &v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::string scalar_str(const Scalar &s) {
  return s.is_int ? std::to_string(s.i) : fmt::format("{}", s.f);
}

std::string names(const Program &p, const std::vector<ValueId> &ids) {
  std::vector<std::string> n;
  for (auto id : ids)
    n.push_back("%" + p.value(id).name);
  return fmt::format("{}", fmt::join(n, ", "));
}

void reduce_attrs(const Op &op, std::vector<std::string> &attrs) {
  attrs.push_back(fmt::format("axis={}", op.axis));
  attrs.push_back(fmt::format("keepdim={}", op.keepdim));
}

void standalone_attrs(const Op &op, std::vector<std::string> &attrs) {
  using S = StandaloneKind;
  switch (kind_as<S>(op.kind)) {
  case S::Argmax:
  case S::Argmin:
    reduce_attrs(op, attrs);
    break;
  case S::Cumsum:
  case S::Cumprod:
  case S::Concat:
    attrs.push_back(fmt::format("axis={}", op.axis));
    break;
  case S::Permute:
    attrs.push_back(fmt::format("perm=[{}]", fmt::join(op.perm, ", ")));
    break;
  case S::Tril:
  case S::Triu:
    attrs.push_back("diagonal=" + op.diagonal.str());
    break;
  case S::Arange:
    attrs.push_back("start=" + op.start.str());
    attrs.push_back("step=" + op.step.str());
    attrs.push_back(fmt::format("reals=[{}]", fmt::join(op.reals, ", ")));
    break;
  case S::Uniform:
  case S::Normal:
    attrs.push_back(fmt::format("key={}, counter={}", op.rng_key, op.rng_counter));
    attrs.push_back(fmt::format("reals=[{}]", fmt::join(op.reals, ", ")));
    break;
  case S::Reshape:
  case S::Expand:
  case S::Tile:
  case S::Pad:
    break;
  }
}

void shmem_attrs(const Op &op, std::vector<std::string> &attrs) {
  using H = ShmemKind;
  const H k = kind_as<H>(op.kind);
  switch (k) {
  case H::ShmemPut:
  case H::ShmemGet:
  case H::ShmemSignal:
  case H::ShmemWaitUntil:
  case H::ShmemClearData:
    break;
  case H::Nop:
  case H::ShmemClearSignal:
  case H::ShmemFence:
  case H::ShmemQuiet:
    return;
  case H::ShmemPutSignal:
  case H::ShmemAtomicFetchAdd:
  case H::ShmemAtomicSwap:
  case H::ShmemAtomicCompareSwap:
    break;
  case H::ShmemWaitUntilAll:
  case H::ShmemWaitUntilAny:
  case H::ShmemWaitUntilSome:
  case H::ShmemTest: {
    std::vector<std::string> elems;
    for (size_t i = 0; i < op.set_rows.size(); ++i)
      elems.push_back(str(op.set_offsets[i]) + ":pe=" + op.set_rows[i].str());
    attrs.push_back(fmt::format("shmem={}", op.shmem));
    attrs.push_back(fmt::format("set=[{}]", fmt::join(elems, ", ")));
    attrs.push_back(fmt::format("cmp={} value={}", static_cast<int>(op.cmp), op.signal));
    if (op.clear)
      attrs.push_back("clear");
    if (op.test)
      attrs.push_back("test");
    if (op.slots)
      attrs.push_back(
          fmt::format("slots={}x{}", op.slots->view_tile_num, op.slots->total_tile_num));
    return;
  }
  }
  attrs.push_back(fmt::format("shmem={}", op.shmem));
  attrs.push_back("view=" + ints(op.view_shape) + "@" + str(op.view_offsets));
  if (k != H::ShmemClearData)
    attrs.push_back("pe=" + op.pe.str());
  if (k == H::ShmemPut || k == H::ShmemSignal || k == H::ShmemPutSignal)
    attrs.push_back(op.atomic == Atomic::Add ? "ADD" : "SET");
  if (k == H::ShmemSignal)
    attrs.push_back(op.target_all ? "target=all" : "target=" + op.target_pe.str());
  if (k == H::ShmemPutSignal)
    attrs.push_back(fmt::format("signal {} row={}", op.sig_atomic == Atomic::Add ? "ADD" : "SET",
                                op.target_pe.str()));
  if (k == H::ShmemSignal || k == H::ShmemWaitUntil || k == H::ShmemPutSignal)
    attrs.push_back(fmt::format("value={}", op.signal));
  if (k == H::ShmemAtomicFetchAdd || k == H::ShmemAtomicSwap || k == H::ShmemAtomicCompareSwap)
    attrs.push_back("amo=" +
                    (op.amo_is_real ? fmt::format("{}", op.amo_real) : op.amo_value.str()));
  if (k == H::ShmemAtomicCompareSwap)
    attrs.push_back("cond=" + op.amo_cond.str());
  if (k == H::ShmemWaitUntil && op.clear)
    attrs.push_back("clear");
  if (k == H::ShmemGet && op.borrow)
    attrs.push_back("borrow");
  if (op.slots)
    attrs.push_back(fmt::format("slots={}x{}", op.slots->view_tile_num, op.slots->total_tile_num));
}

void print_op(const Program &p, const Op &op, int depth, std::string &out) {
  std::string ind(static_cast<size_t>(depth) * 2, ' ');
  if (op.kind == OpKind::Loop) {
    out += fmt::format("{}loop i{} = {} to {} step {} {{\n", ind, op.loop_id, op.start.str(),
                       op.stop.str(), op.step.str());
    for (auto &b : op.body)
      print_op(p, b, depth + 1, out);
    out += ind + "}\n";
    return;
  }
  if (op.kind == OpKind::Paths) {
    out += ind + "paths {\n";
    for (auto &path : op.paths) {
      out += ind + "  if " + path.guard.str() + " {\n";
      for (auto &b : path.body)
        print_op(p, b, depth + 2, out);
      out += ind + "  }\n";
    }
    out += ind + "}\n";
    return;
  }
  if (op.kind == OpKind::Check) {
    // The message is printed: it is compiled into the code, so it is part of the cache key.
    std::vector<std::string> args;
    for (auto &a : op.args)
      args.push_back(a.str());
    out += fmt::format("{}check{} {} {} \"{}\" [{}]\n", ind,
                       op.check_error == CheckError::Distributed ? " distributed"
                       : op.check_error == CheckError::Agreed    ? " agreed"
                                                                 : "",
                       op.label, op.holds.str(), op.message, fmt::join(args, ", "));
    return;
  }
  std::string line = ind + print_op_head(p, op);
  std::vector<std::string> attrs;
  switch (op_info(op.kind).family) {
  case OpFamily::Reduce:
    reduce_attrs(op, attrs);
    break;
  case OpFamily::Standalone:
    standalone_attrs(op, attrs);
    break;
  case OpFamily::Unary:
    if (op.kind == OpKind::Cast)
      attrs.push_back("to=" + name(op.to));
    break;
  case OpFamily::Matmul:
    if (op.a_trans)
      attrs.push_back("a_trans");
    if (op.b_trans)
      attrs.push_back("b_trans");
    if (op.relu)
      attrs.push_back("relu");
    attrs.push_back("cube=" + ints(op.tile.cube) + (op.tile.split_k ? " split_k" : ""));
    break;
  case OpFamily::Shmem:
    shmem_attrs(op, attrs);
    break;
  case OpFamily::Library:
    attrs.push_back(fmt::format("axis={}", op.axis));
    if (op.keepdim)
      attrs.push_back("keepdim");
    if (!op.ints.empty())
      attrs.push_back("ints=" + ints(op.ints));
    if (!op.reals.empty())
      attrs.push_back(fmt::format("reals=[{}]", fmt::join(op.reals, ", ")));
    break;
  case OpFamily::Binary:
  case OpFamily::Select:
  case OpFamily::Create:
  case OpFamily::Move:
  case OpFamily::Check:   // printed above
  case OpFamily::Control: // printed above
    break;
  }
  if (!op.tile.vec.empty())
    attrs.push_back("tile=" + ints(op.tile.vec));
  if (!op.preds.empty())
    attrs.push_back("pred=" + names(p, op.preds));
  if (!attrs.empty())
    line += " {" + fmt::format("{}", fmt::join(attrs, ", ")) + "}";
  out += line + "\n";
}

std::string print_impl(const Program &p, bool with_locations) {
  std::string out = "kernel " + p.name + "\n";
  for (auto &c : p.constants)
    out += "  const " + c.repr + "\n";
  for (auto &g : p.groups)
    out +=
        fmt::format("  group {} n_pes={} heap={}B{}\n", g.name, g.n_pes, g.heap_bytes,
                    g.zero_bytes == g.heap_bytes ? "" : fmt::format(" zeroed={}B", g.zero_bytes));
  for (size_t i = 0; i < p.shmems.size(); ++i) {
    auto &s = p.shmems[i];
    out += fmt::format("  shmem{} group={} {} {} data@{}+{} signal@{}+{}{}\n", i, s.group,
                       short_name(s.dtype), ints(s.shape), s.data_offset_bytes, s.data_bytes,
                       s.signal_offset_bytes, s.signal_bytes, s.zero_data ? "" : " overwritten");
  }
  for (auto &v : p.values) {
    if (v.kind == ValueKind::Token)
      continue;
    out += fmt::format("  %{}: {} {} {}", v.name, kind_name(v.kind), short_name(v.dtype),
                       str(v.shape));
    bool full_valid = v.valid.size() == v.shape.size();
    for (size_t d = 0; full_valid && d < v.shape.size(); ++d)
      full_valid = v.valid[d].same_as(v.shape[d]);
    if (!full_valid)
      out += " valid " + str(v.valid);
    if (v.kind == ValueKind::View)
      out += " of %" + p.value(v.base).name + " @" + str(v.offsets);
    out += "\n";
  }
  std::string body;
  for (auto &op : p.body)
    print_op(p, op, 1, body);
  out += body;
  (void)with_locations;
  return out;
}

} // namespace

std::string print_op_head(const Program &p, const Op &op) {
  std::string line;
  if (!op.outputs.empty())
    line += names(p, op.outputs) + " = ";
  line += op_info(op.kind).name;
  line += "(" + names(p, op.inputs);
  if (op.scalar)
    line += (op.inputs.empty() ? "" : ", ") + std::string("scalar ") + scalar_str(*op.scalar) +
            (op.scalar_first ? " first" : "");
  return line + ")";
}

std::string print(const Program &p) { return print_impl(p, false); }

uint64_t structural_hash(const Program &p) { return text_hash(print_impl(p, false)); }

uint64_t text_hash(const std::string &printed) {
  // FNV-1a over the printed form: locations are not printed, so equal programs traced from
  // different lines share compiled code.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : printed) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace pto::ir
