//! What several targets share: the shipped ontology, the demo catalog and a snapshot of it
//! embedded with the deterministic `HashEmbedder` (built once into `fuzz/target/` and reused
//! by later runs), so the tool targets call the real dispatcher over real data.

#![allow(dead_code)] // each target uses a different subset

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use govcat::catalog::dir::DirSource;
use govcat::catalog::{Caller, Domain};
use govcat::embed::{Embedder, HashEmbedder};
use govcat::index::{self, SnapshotHandle};
use govcat::ontology::Ontology;
use govcat::tools::Context;

pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

pub fn ontology() -> Ontology {
    Ontology::load(&repo().join("ontology/lf-tags.json")).expect("shipped ontology")
}

pub fn demo_source(ontology: &Ontology) -> DirSource {
    DirSource::open(&repo().join("fixtures/catalog"), ontology.clone()).expect("demo catalog")
}

/// A tool context over the demo catalog and its hashed snapshot, built once per process.
pub fn context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let ontology = ontology();
        let source = demo_source(&ontology);
        let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(384));
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/demo-snapshot"));
        let snapshot = match index::load_current(&dir, embedder.as_ref()) {
            Ok(s) => s,
            Err(_) => {
                index::build(&dir, &ontology, &source, embedder.as_ref(), &index::Quiet)
                    .expect("building the demo snapshot");
                index::load_current(&dir, embedder.as_ref()).expect("loading the demo snapshot")
            }
        };
        let handle = SnapshotHandle::new();
        handle.swap(snapshot);
        Context::new(ontology, Box::new(source)).with_retrieval(embedder, handle)
    })
}

/// The local operator, or a caller who may read only `fraud` and `claims`.
pub fn caller(restricted: bool) -> Caller {
    if restricted {
        Caller {
            subject: "fuzz".into(),
            readable: Some(
                ["fraud", "claims"]
                    .iter()
                    .map(|d| Domain((*d).to_string()))
                    .collect(),
            ),
        }
    } else {
        Caller::local()
    }
}

/// Error kinds that mean govcat itself is broken, whatever the input.
pub const INTERNAL_KINDS: &[&str] = &["InternalError", "OutputSchemaViolation"];
