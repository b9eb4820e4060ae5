//! The CUDA path for real where a GPU exists; elsewhere each test says it skipped.
use rlmon::config::{DataSource, LmConfig, ModelConfig, MoeConfig, NdtConfig, DEFAULT_OPTIMIZER};
use rlmon::workload::driver::{Setup, Trainer};
use rlmon::workload::faults::FaultInjector;
use rlmon::workload::lm::LmTrainer;
use tch::{Cuda, Device};

#[test]
fn lm_trains_on_cuda_when_available() {
    if !Cuda::is_available() {
        eprintln!("skipped: CUDA not available on this machine (libtorch_cuda loaded, no GPU or driver)");
        return;
    }
    let cfg = LmConfig {
        model: ModelConfig { layers: 1, d_model: 64, heads: 4, seq_len: 32, vocab: 256 },
        optimizer: DEFAULT_OPTIMIZER,
        batch_size: 8,
        data: DataSource::Synthetic,
        // MoE routing and the dimensionality SVD run on the GPU too.
        moe: Some(MoeConfig { experts: 4, top_k: 2, layers: vec![0], capacity_factor: 1.25, aux_loss_coef: 0.01, z_loss_coef: 0.001, bias_balancing: 0.0 }),
        ndt: Some(NdtConfig { every: 10, layers: vec![0] }),
    };
    // Seed 0 for the data order, as the driver would set it up (weights unseeded).
    let setup = Setup { device: Device::Cuda(0), seed: 0, deterministic: true };
    let corpus = LmTrainer::prepare(&cfg, &setup).unwrap();
    let mut trainer = LmTrainer::setup(&cfg, corpus, &setup).unwrap();
    let mut first = None;
    let mut last = 0.0;
    let faults = FaultInjector::none();
    for step in 1..=30 {
        let stats = trainer.step(step, 3e-3, &faults);
        assert!(stats.extra.iter().any(|(n, _)| n == "moe/L0/load/E0"));
        last = stats.loss;
        first.get_or_insert(last);
    }
    assert!(last < first.unwrap() - 0.5, "loss fell on CUDA: {first:?} -> {last}");
}
