//! What every provider test uses: wrap contexts, error classes, and one
//! fleet member (a scheduler on a manual clock plus its envelope).

use std::sync::Arc;

use stateseal::provider::{ErrorClass, WrapContext};
use stateseal::rotation::SchedulerConfig;
use stateseal::{
    AesGcmCodec, Envelope, Error, KeysetStore, ManualClock, ProviderRegistry, RequestIdentity,
    RingHandle, RotationScheduler,
};

pub(crate) const PARAMS: &str = r#"{"name":"deploy","arguments":{"env":"prod"}}"#;
pub(crate) const T0: f64 = 1_782_345_600.0;

pub(crate) fn ctx<'a>(keyset_id: &'a str, entry_id: &'a str) -> WrapContext<'a> {
    WrapContext {
        keyset_id,
        entry_id,
    }
}

pub(crate) fn class(e: &Error) -> Option<ErrorClass> {
    match e {
        Error::Kms { class, .. } => Some(*class),
        _ => None,
    }
}

pub(crate) fn base64_of(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub(crate) fn round() -> RequestIdentity {
    RequestIdentity::from_json("tools/call", br#"{"name":"t","arguments":{}}"#).expect("id")
}

pub(crate) struct Instance {
    pub(crate) sched: RotationScheduler,
    pub(crate) env: Envelope,
}

pub(crate) fn instance(reg: &ProviderRegistry, store: Arc<dyn KeysetStore>) -> Instance {
    let ring = Arc::new(RingHandle::empty());
    let config = SchedulerConfig::default()
        .max_key_age(3600.0)
        .outage_grace(86_400.0)
        .rotation_period(None);
    let sched = RotationScheduler::new(
        config,
        store,
        reg.clone(),
        ring.clone(),
        Arc::new(ManualClock::new(T0)),
    )
    .expect("scheduler");
    let env = Envelope::builder(Arc::new(AesGcmCodec::new(ring)), Some("svc"))
        .build()
        .expect("envelope");
    Instance { sched, env }
}

pub(crate) fn works(i: &Instance, now: f64) -> bool {
    i.env
        .mint_at(&round(), b"s", None, now)
        .and_then(|t| i.env.verify_at(&round(), &t, None, now))
        .is_ok()
}
