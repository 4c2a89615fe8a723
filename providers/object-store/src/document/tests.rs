use super::*;

#[derive(Debug)]
struct Never;
impl Connect for Never {
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn ObjectStore>, Error>> {
        Box::pin(async { Err(Error::Config("unused".into())) })
    }
}

#[test]
fn object_uris() {
    let any = |b: &str| !b.is_empty();
    let mut seen = String::new();
    let doc = ObjectDocument::open("gs", "gs://keys/prod/keyset.json", any, |_, b| {
        seen = b.to_owned();
        Never
    })
    .expect("uri");
    assert_eq!(seen, "keys");
    assert_eq!(doc.path.as_ref(), "prod/keyset.json");
    for bad in [
        "gs://keys",
        "gs://keys/",
        "gs://keys/a//b",
        "gs://keys/../k",
        "gs://keys/./k",
        "gs://keys/a\nb",
        "s3://keys/k",
        "gs:/keys/k",
        "gs:///k",
    ] {
        let e = ObjectDocument::open("gs", bad, any, |_, _| Never).unwrap_err();
        assert!(
            e.to_string()
                .contains("expected gs://<bucket>/<object key>"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn limits() {
    assert!(Limits::default().check("x").is_ok());
    let retry = Limits::default().retry();
    assert_eq!(retry.max_retries, 2);
    assert_eq!(retry.retry_timeout, Duration::from_secs(10));
    for bad in [
        Limits {
            max_attempts: 0,
            ..Limits::default()
        },
        Limits {
            connect_timeout: Duration::ZERO,
            ..Limits::default()
        },
        Limits {
            attempt_timeout: Duration::from_secs(60),
            ..Limits::default()
        },
    ] {
        assert!(bad.check("gcs").unwrap_err().to_string().contains("gcs:"));
    }
}
