// ATen's multi-tensor optimizer kernels, which the tch crate's generated bindings
// leave out (they take lists of tensors to update in place and return nothing).
// Each entry point takes tch tensors (pointers to at::Tensor), copies the
// exception's message into `err` and returns 1 on failure, 0 otherwise.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/stack.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <vector>

namespace {

std::vector<at::Tensor> list(at::Tensor *const *tensors, size_t n) {
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(*tensors[i]);
  return out;
}

int fail(const std::exception &e, char *err, size_t err_len) {
  if (err_len > 0) {
    std::strncpy(err, e.what(), err_len - 1);
    err[err_len - 1] = '\0';
  }
  return 1;
}

}  // namespace

extern "C" {

// One AdamW step over n parameters (one kernel per device and dtype, as PyTorch's
// `AdamW(fused=True)`). `steps` are float scalars on the parameters' device, each
// parameter's count of updates, advanced here first.
int rlmon_fused_adamw(at::Tensor *const *params, at::Tensor *const *grads, at::Tensor *const *exp_avgs,
                      at::Tensor *const *exp_avg_sqs, at::Tensor *const *steps, size_t n, double lr, double beta1,
                      double beta2, double weight_decay, double eps, char *err, size_t err_len) {
  try {
    std::vector<at::Tensor> counts = list(steps, n);
    at::_foreach_add_(counts, 1);
    at::_fused_adamw_(list(params, n), list(grads, n), list(exp_avgs, n), list(exp_avg_sqs, n), {}, counts,
                      lr, beta1, beta2, weight_decay, eps, /*amsgrad=*/false, /*maximize=*/false);
    return 0;
  } catch (const std::exception &e) {
    return fail(e, err, err_len);
  }
}

// The global L2 norm of n gradients, written to *norm; when it exceeds max_norm
// (and is finite) every gradient is scaled by max_norm / (norm + 1e-6) in place.
int rlmon_clip_grad_norm(at::Tensor *const *grads, size_t n, double max_norm, double *norm, char *err,
                         size_t err_len) {
  try {
    std::vector<at::Tensor> g = list(grads, n);
    std::vector<at::Tensor> norms = at::_foreach_norm(g, 2);
    double total = at::linalg_vector_norm(at::stack(norms), 2).item<double>();
    *norm = total;
    double coef = max_norm / (total + 1e-6);
    if (std::isfinite(total) && coef < 1.0) at::_foreach_mul_(g, coef);
    return 0;
  } catch (const std::exception &e) {
    return fail(e, err, err_len);
  }
}

// Drops the gradients of n tensors (PyTorch's zero_grad(set_to_none=True)).
void rlmon_clear_grads(at::Tensor *const *tensors, size_t n) {
  for (size_t i = 0; i < n; ++i) tensors[i]->mutable_grad().reset();
}
}
