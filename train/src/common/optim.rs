//! AdamW as every built-in workload configures it, and global gradient-norm clipping,
//! both on ATen's multi-tensor kernels (csrc/optim.cpp): one fused AdamW kernel per
//! step instead of about ten element-wise passes per parameter, which on a small
//! model is a tenth of the step.
use std::ffi::{c_char, c_int, c_void, CStr};

use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use super::model::NO_DECAY_GROUP;
use rlmon::config::OptimizerConfig;

const ADAM_EPS: f64 = 1e-8;
const ERR_LEN: usize = 512;

extern "C" {
    fn rlmon_fused_adamw(
        params: *const *mut c_void,
        grads: *const *mut c_void,
        exp_avgs: *const *mut c_void,
        exp_avg_sqs: *const *mut c_void,
        steps: *const *mut c_void,
        n: usize,
        lr: f64,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        err: *mut c_char,
        err_len: usize,
    ) -> c_int;
    fn rlmon_clip_grad_norm(grads: *const *mut c_void, n: usize, max_norm: f64, norm: *mut f64, err: *mut c_char, err_len: usize) -> c_int;
    fn rlmon_clear_grads(tensors: *const *mut c_void, n: usize);
}

fn pointers<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> Vec<*mut c_void> {
    tensors.into_iter().map(|t| t.as_ptr() as *mut c_void).collect()
}

/// Runs one of the shim's entry points with an error buffer. A libtorch error panics
/// with its message, as tch's own infallible operations do (the worker reports a
/// panic as the run's failure).
fn checked(what: &str, call: impl FnOnce(*mut c_char, usize) -> c_int) {
    let mut err = [0 as c_char; ERR_LEN];
    if call(err.as_mut_ptr(), ERR_LEN) != 0 {
        // SAFETY: the shim always writes a NUL-terminated message within ERR_LEN.
        let message = unsafe { CStr::from_ptr(err.as_ptr()) }.to_string_lossy().into_owned();
        panic!("{what}: libtorch: {message}");
    }
}

/// One parameter with its AdamW state.
struct Slot {
    param: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    /// Updates this parameter has had (a float scalar on its device, as the kernel
    /// wants; the shim advances it).
    step: Tensor,
    weight_decay: f64,
}

/// AdamW (decoupled weight decay), with no weight decay on the parameters of the
/// `NO_DECAY_GROUP` (LayerNorm gains and biases). The same update as
/// `torch.optim.AdamW(fused=True)`; a parameter without a gradient this step (an
/// MoE expert no token reached) is left alone and its step count does not advance.
pub struct AdamW {
    vs_variables: std::sync::Arc<std::sync::Mutex<tch::nn::Variables>>,
    slots: Vec<Slot>,
    lr: f64,
    beta1: f64,
    beta2: f64,
    weight_decay: f64,
}

/// AdamW over `vs` at `o.lr`.
pub fn adamw(vs: &VarStore, o: &OptimizerConfig) -> AdamW {
    let mut opt = AdamW {
        vs_variables: vs.variables_.clone(),
        slots: Vec::new(),
        lr: o.lr,
        beta1: o.betas[0],
        beta2: o.betas[1],
        weight_decay: o.weight_decay,
    };
    opt.track_new_variables();
    opt
}

impl AdamW {
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    /// Takes in the variables added to the store since the last call (as tch's
    /// optimizer does), with zeroed moments.
    fn track_new_variables(&mut self) {
        let variables = self.vs_variables.lock().unwrap_or_else(|e| e.into_inner());
        for var in variables.trainable_variables.iter().skip(self.slots.len()) {
            let param = var.tensor.shallow_clone();
            let weight_decay = if var.group == NO_DECAY_GROUP { 0.0 } else { self.weight_decay };
            let state = || tch::no_grad(|| param.zeros_like());
            self.slots.push(Slot {
                exp_avg: state(),
                exp_avg_sq: state(),
                step: Tensor::zeros([], (Kind::Float, param.device())),
                param,
                weight_decay,
            });
        }
    }

    /// Drops every parameter's gradient (PyTorch's `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&mut self) {
        self.track_new_variables();
        let params = pointers(self.slots.iter().map(|s| &s.param));
        // SAFETY: each pointer is a live tch tensor (an at::Tensor) held by self.slots.
        unsafe { rlmon_clear_grads(params.as_ptr(), params.len()) };
    }

    /// One update of every parameter that has a gradient: one kernel call per weight
    /// decay and device.
    pub fn step(&mut self) {
        self.track_new_variables();
        // (weight decay, device, the slots' indices with their gradients)
        type Batch = (f64, Device, Vec<(usize, Tensor)>);
        let mut batches: Vec<Batch> = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            let grad = slot.param.grad();
            if !grad.defined() {
                continue;
            }
            let device = slot.param.device();
            match batches.iter_mut().find(|(wd, d, _)| *wd == slot.weight_decay && *d == device) {
                Some((_, _, members)) => members.push((i, grad)),
                None => batches.push((slot.weight_decay, device, vec![(i, grad)])),
            }
        }
        tch::no_grad(|| {
            for (weight_decay, _, members) in &batches {
                let slots: Vec<&Slot> = members.iter().map(|(i, _)| &self.slots[*i]).collect();
                let params = pointers(slots.iter().map(|s| &s.param));
                let grads = pointers(members.iter().map(|(_, g)| g));
                let exp_avgs = pointers(slots.iter().map(|s| &s.exp_avg));
                let exp_avg_sqs = pointers(slots.iter().map(|s| &s.exp_avg_sq));
                let steps = pointers(slots.iter().map(|s| &s.step));
                let (lr, b1, b2) = (self.lr, self.beta1, self.beta2);
                checked("AdamW step", |err, len| unsafe {
                    // SAFETY: five lists of params.len() live tensors, held above.
                    rlmon_fused_adamw(
                        params.as_ptr(),
                        grads.as_ptr(),
                        exp_avgs.as_ptr(),
                        exp_avg_sqs.as_ptr(),
                        steps.as_ptr(),
                        params.len(),
                        lr,
                        b1,
                        b2,
                        *weight_decay,
                        ADAM_EPS,
                        err,
                        len,
                    )
                });
            }
        })
    }
}

/// Scales gradients so that their global L2 norm is at most `max_norm`; returns the
/// norm before clipping.
pub fn clip_gradients(vs: &VarStore, max_norm: f64) -> f64 {
    let grads: Vec<Tensor> = vs.trainable_variables().iter().map(Tensor::grad).filter(Tensor::defined).collect();
    if grads.is_empty() {
        return 0.0;
    }
    let pointers = pointers(&grads);
    let mut norm = 0.0;
    tch::no_grad(|| {
        // SAFETY: pointers to the live gradients in `grads`.
        checked("gradient clipping", |err, len| unsafe {
            rlmon_clip_grad_norm(pointers.as_ptr(), pointers.len(), max_norm, &mut norm, err, len)
        })
    });
    norm
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::nn::{Init, VarStore};

    /// AdamW written out with tensor operations, as torch.optim.AdamW's reference
    /// (for-loop) implementation: the fused kernel must agree with it.
    fn reference_step(p: &Tensor, g: &Tensor, m: &mut Tensor, v: &mut Tensor, step: f64, lr: f64, wd: f64) -> Tensor {
        let (b1, b2) = (0.9, 0.95);
        *m = &*m * b1 + g * (1.0 - b1);
        *v = &*v * b2 + g * g * (1.0 - b2);
        let decayed = p * (1.0 - lr * wd);
        let denom = (v.sqrt() / (1.0 - b2.powf(step)).sqrt()) + ADAM_EPS;
        decayed - (&*m / denom) * (lr / (1.0 - b1.powf(step)))
    }

    fn config() -> OptimizerConfig {
        OptimizerConfig { lr: 0.01, betas: [0.9, 0.95], weight_decay: 0.1, ..rlmon::config::DEFAULT_OPTIMIZER }
    }

    #[test]
    fn the_fused_step_is_adamw_with_decay_only_outside_the_no_decay_group() {
        tch::manual_seed(1);
        let vs = VarStore::new(Device::Cpu);
        let w = vs.root().var("w", &[4, 3], Init::Randn { mean: 0.0, stdev: 1.0 });
        let b = vs.root().set_group(NO_DECAY_GROUP).var("b", &[3], Init::Randn { mean: 0.0, stdev: 1.0 });
        let x = Tensor::randn([5, 4], (Kind::Float, Device::Cpu));
        let mut opt = adamw(&vs, &config());
        let (mut w_ref, mut b_ref) = (w.detach().copy(), b.detach().copy());
        let (mut mw, mut vw, mut mb, mut vb) = (w_ref.zeros_like(), w_ref.zeros_like(), b_ref.zeros_like(), b_ref.zeros_like());
        for step in 1..=3 {
            opt.zero_grad();
            (x.matmul(&w) + &b).pow_tensor_scalar(2).sum(Kind::Float).backward();
            let (gw, gb) = (w.grad().detach().copy(), b.grad().detach().copy());
            opt.step();
            w_ref = reference_step(&w_ref, &gw, &mut mw, &mut vw, step as f64, 0.01, 0.1);
            b_ref = reference_step(&b_ref, &gb, &mut mb, &mut vb, step as f64, 0.01, 0.0);
            assert!(w.detach().allclose(&w_ref, 1e-5, 1e-7, false), "step {step}: w {w} vs {w_ref}");
            assert!(b.detach().allclose(&b_ref, 1e-5, 1e-7, false), "step {step}: b {b} vs {b_ref}");
        }
    }

    #[test]
    fn a_parameter_without_a_gradient_is_left_alone() {
        let vs = VarStore::new(Device::Cpu);
        let used = vs.root().var("used", &[2], Init::Const(1.0));
        let unused = vs.root().var("unused", &[2], Init::Const(1.0));
        let mut opt = adamw(&vs, &config());
        opt.zero_grad();
        used.sum(Kind::Float).backward();
        opt.step();
        assert!(!unused.grad().defined());
        assert_eq!(Vec::<f32>::try_from(&unused.detach()).unwrap(), vec![1.0, 1.0]);
        assert!(Vec::<f32>::try_from(&used.detach()).unwrap().iter().all(|&v| v < 1.0));
        opt.zero_grad();
        assert!(!used.grad().defined(), "zero_grad drops the gradients");
    }

    #[test]
    fn clipping_scales_to_the_bound_and_returns_the_norm_before() {
        let vs = VarStore::new(Device::Cpu);
        let a = vs.root().var("a", &[1], Init::Const(0.0));
        let b = vs.root().var("b", &[1], Init::Const(0.0));
        (&a * 3.0 + &b * 4.0).sum(Kind::Float).backward();
        let norm = clip_gradients(&vs, 1.0);
        assert!((norm - 5.0).abs() < 1e-5, "{norm}");
        let (ga, gb) = (a.grad().double_value(&[0]), b.grad().double_value(&[0]));
        assert!((ga - 0.6).abs() < 1e-5 && (gb - 0.8).abs() < 1e-5, "{ga} {gb}");
        assert!((clip_gradients(&vs, 10.0) - 1.0).abs() < 1e-5, "under the bound: unchanged");
    }
}
