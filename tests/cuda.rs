//! The CUDA path for real where a GPU exists; elsewhere each test says it skipped.
use rlmon::config::{DataSource, LmConfig, ModelConfig, DEFAULT_OPTIMIZER};
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
    };
    let corpus = Corpus::load(&cfg.data, 0).unwrap();
    let mut trainer = Trainer::new(&cfg, Device::Cuda(0)).unwrap();
    let mut rng = SplitMix64::new(0);
    let mut first = None;
    let mut last = 0.0;
    for _ in 0..30 {
        let (x, y) = corpus.batch(&mut rng, cfg.batch_size, cfg.model.seq_len, Device::Cuda(0));
        last = trainer.step(&x, &y, 3e-3).loss;
        first.get_or_insert(last);
    }
    assert!(last < first.unwrap() - 0.5, "loss fell on CUDA: {first:?} -> {last}");
}
