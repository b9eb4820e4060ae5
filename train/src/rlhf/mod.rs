//! Workload `rlhf`: RL fine-tuning of the shared byte transformer (optionally
//! pretrained for a few hundred steps on the synthetic corpus first) against a frozen
//! reference copy, with a programmatic reward, by PPO or GRPO, with a KL penalty.
//! Everything is real: sampled responses, rewards computed on their bytes, gradients
//! through libtorch. `trainer::RlhfTrainer` is the driver's `Trainer`.
pub mod grpo;
pub mod kl;
pub mod policy;
pub mod ppo;
pub mod reward;
pub mod rollout;
pub mod trainer;

#[cfg(test)]
pub(crate) mod tests {
    use super::trainer::{RlhfTrainer, StepStats};
    use rlmon::config::rlhf::DEFAULT_RLHF;
    use rlmon::config::{KlEstimator, ModelConfig, RewardKind, RlAlgorithm, RlhfConfig};
    use rlmon::metrics::{catalog, MetricName};
    use crate::determinism;
    use crate::driver::{StepTiming, Trainer};
    use crate::faults::FaultInjector;
    use tch::{Device, Tensor};

    pub(crate) fn tiny_config(algorithm: RlAlgorithm) -> RlhfConfig {
        let d = DEFAULT_RLHF;
        RlhfConfig {
            model: ModelConfig { layers: 1, d_model: 32, heads: 2, seq_len: 24, vocab: 256 },
            optimizer: rlmon::config::OptimizerConfig { lr: 1e-3, ..rlmon::config::rlhf::RLHF_OPTIMIZER },
            batch_size: 8,
            algorithm,
            reward: RewardKind::Target(b"e".to_vec()),
            kl_coef: 0.1,
            kl_estimator: KlEstimator::K3,
            adaptive_kl: None,
            group_size: if algorithm == RlAlgorithm::Grpo { 4 } else { 1 },
            prompt_len: 8,
            max_new_tokens: 8,
            stop: d.stop,
            temperature: 1.0,
            clip_range: 0.2,
            gamma: 1.0,
            lambda: 0.95,
            vf_coef: 0.1,
            epochs: 2,
            minibatches: 2,
            // Enough to learn byte frequencies, so that rewards differ between samples.
            pretrain_steps: 30,
            pretrain_lr: d.pretrain_lr,
        }
    }

    /// A trainer after its pretraining.
    fn trainer(cfg: &RlhfConfig, seed: u64) -> RlhfTrainer {
        let mut t = {
            let _init = determinism::seeded_init(seed);
            RlhfTrainer::new(cfg, Device::Cpu, seed, true).unwrap()
        };
        assert!(t.pretrain(|| false).unwrap());
        t
    }

    fn snapshot(t: &RlhfTrainer) -> Vec<Tensor> {
        let mut vars: Vec<(String, Tensor)> = t.policy_vars().variables().into_iter().collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        vars.into_iter().map(|(_, v)| v.copy()).collect()
    }

    fn changed(before: &[Tensor], t: &RlhfTrainer) -> bool {
        before.iter().zip(snapshot(t)).any(|(a, b)| !a.equal(&b))
    }

    fn steps(t: &mut RlhfTrainer, faults: &FaultInjector, n: u64) -> Vec<StepStats> {
        (1..=n).map(|step| t.step(step, 1e-3, faults)).collect()
    }

    #[test]
    fn a_ppo_step_changes_the_policy_and_keeps_kl_finite() {
        tch::set_num_threads(1);
        let cfg = tiny_config(RlAlgorithm::Ppo);
        let mut t = trainer(&cfg, 1);
        let before = snapshot(&t);
        let stats = steps(&mut t, &FaultInjector::none(), 2);
        assert!(changed(&before, &t), "parameters moved");
        assert_eq!(stats[0].kl, 0.0, "the first responses come from the reference itself");
        for s in &stats {
            assert!(s.kl.is_finite() && s.kl >= 0.0, "k3 is finite and non-negative: {}", s.kl);
            assert!(s.value_loss.is_some_and(f64::is_finite) && s.frac_reward_zero_std.is_none());
            assert!(s.grad_norm > 0.0 && s.loss.is_finite() && s.entropy > 0.0);
            assert!((1.0..=8.0).contains(&s.response_len) && s.samples == 8);
            assert_eq!(s.tokens, (8.0 * (8.0 + s.response_len)).round() as usize);
        }
        assert!(stats[1].kl > 0.0, "after an update the policy differs from the reference");
        assert!(stats[0].approx_kl > 0.0, "the second epoch sees a changed policy");
    }

    #[test]
    fn a_grpo_step_changes_the_policy_and_keeps_kl_finite() {
        tch::set_num_threads(1);
        let mut cfg = tiny_config(RlAlgorithm::Grpo);
        cfg.kl_estimator = KlEstimator::K1;
        let mut t = trainer(&cfg, 2);
        let before = snapshot(&t);
        let stats = steps(&mut t, &FaultInjector::none(), 2);
        assert!(changed(&before, &t), "parameters moved");
        for s in &stats {
            assert!(s.kl.is_finite());
            assert!(s.value_loss.is_none());
            assert!(s.frac_reward_zero_std.is_some_and(|f| (0.0..=1.0).contains(&f)));
        }
        assert_ne!(stats[1].kl, 0.0);
    }

    #[test]
    fn kl_coef_zero_fault_zeroes_the_coefficient_from_its_step() {
        tch::set_num_threads(1);
        let cfg = tiny_config(RlAlgorithm::Grpo);
        let mut faults = FaultInjector::none();
        faults.cfg.kl_coef_zero_at = Some(2);
        let stats = steps(&mut trainer(&cfg, 3), &faults, 3);
        let coefs: Vec<f64> = stats.iter().map(|s| s.kl_coef).collect();
        assert_eq!(coefs, [0.1, 0.0, 0.0]);
    }

    #[test]
    fn reward_gaming_fault_trains_on_the_length_reward() {
        tch::set_num_threads(1);
        let cfg = tiny_config(RlAlgorithm::Ppo);
        let mut faults = FaultInjector::none();
        faults.cfg.reward_gaming_at = Some(2);
        let stats = steps(&mut trainer(&cfg, 4), &faults, 3);
        assert_eq!(stats[0].reward, stats[0].reward_gold, "before the fault the configured reward is trained on");
        for s in &stats[1..] {
            let length_reward = s.response_len / cfg.max_new_tokens as f64;
            assert!((s.reward - length_reward).abs() < 1e-12, "reward {} is the length reward {length_reward}", s.reward);
        }
        assert!(stats[1..].iter().any(|s| s.reward != s.reward_gold), "the gold reward is still the configured one");
    }

    #[test]
    fn replicas_with_the_same_seed_give_identical_metrics() {
        let cfg = tiny_config(RlAlgorithm::Ppo);
        let run = |cfg: RlhfConfig| {
            std::thread::spawn(move || {
                tch::set_num_threads(1);
                determinism::apply(true);
                let mut t = trainer(&cfg, 7);
                let stats = steps(&mut t, &FaultInjector::none(), 3);
                let timing = StepTiming { lr: 1e-3, step_time_s: 0.0 };
                stats.into_iter().map(|s| t.metrics(s, timing)).collect::<Vec<_>>()
            })
        };
        // Concurrently, as replicas run: both share libtorch's global generator.
        let (a, b) = (run(cfg.clone()), run(cfg));
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let bits = |m: &Vec<Vec<(MetricName, f64)>>| -> Vec<(String, u64)> {
            m.iter().flatten().map(|(n, v)| (n.to_string(), v.to_bits())).collect()
        };
        assert_eq!(bits(&a), bits(&b));
        assert!(a.iter().flatten().any(|(n, v)| n == catalog::KL && *v > 0.0));
    }

    #[test]
    fn pretraining_moves_the_policy_and_the_reference_follows() {
        tch::set_num_threads(1);
        let mut cfg = tiny_config(RlAlgorithm::Grpo);
        cfg.pretrain_steps = 3;
        let mut t = {
            let _init = determinism::seeded_init(5);
            RlhfTrainer::new(&cfg, Device::Cpu, 5, false).unwrap()
        };
        let before = snapshot(&t);
        assert!(t.pretrain(|| false).unwrap());
        assert!(changed(&before, &t));
        let first = t.step(1, 1e-3, &FaultInjector::none());
        assert_eq!(first.kl, 0.0, "the reference is the pretrained policy");
    }
}
