//! The CUDA path for real where a GPU exists; elsewhere each test says it skipped.
use rlmon::config::{DataSource, LmConfig, ModelConfig, MoeConfig, NdtConfig, DEFAULT_OPTIMIZER};
use rlmon::workload::faults::FaultInjector;
use rlmon::workload::lm::{data::Corpus, Trainer};
use rlmon::workload::rng::SplitMix64;
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
    let corpus = Corpus::load(&cfg.data, 0).unwrap();
    let mut trainer = Trainer::new(&cfg, Device::Cuda(0), true).unwrap();
    let mut rng = SplitMix64::new(0);
    let mut first = None;
    let mut last = 0.0;
    let faults = FaultInjector::none();
    for step in 1..=30 {
        let (x, y) = corpus.batch(&mut rng, cfg.batch_size, cfg.model.seq_len, Device::Cuda(0));
        let stats = trainer.step(&x, &y, 3e-3, step, &faults);
        assert!(stats.extra.iter().any(|(n, _)| n == "moe/L0/load/E0"));
        last = stats.loss;
        first.get_or_insert(last);
    }
    assert!(last < first.unwrap() - 0.5, "loss fell on CUDA: {first:?} -> {last}");
}
