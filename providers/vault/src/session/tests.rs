use super::*;

fn api(code: u16, msg: &str) -> ClientError {
    ClientError::APIError {
        code,
        errors: vec![msg.to_owned()],
    }
}

#[test]
fn classes() {
    assert_eq!(class_of(&api(403, "permission denied")), ErrorClass::Denied);
    assert_eq!(
        class_of(&api(400, "encryption key not found")),
        ErrorClass::Denied
    );
    assert_eq!(
        class_of(&api(400, "cipher: message authentication failed")),
        ErrorClass::Invalid
    );
    assert_eq!(
        class_of(&api(503, "Vault is sealed")),
        ErrorClass::Transient
    );
    assert_eq!(class_of(&api(429, "rate limited")), ErrorClass::Transient);
    let e = classify("hcvault", "decrypt", &api(503, "Vault is sealed"));
    assert_eq!(
        e.to_string(),
        "hcvault KMS: transient: decrypt: HTTP 503: Vault is sealed"
    );
}

#[test]
fn renewal_time() {
    let now = Instant::now();
    assert_eq!(renew_at(now, 0, 0.25), None);
    let at = renew_at(now, 100, 0.25).unwrap();
    assert_eq!(at - now, Duration::from_secs(75));
    let login = Login {
        client: Arc::new(
            Session::client_with(
                &VaultConfig::builder("http://127.0.0.1:1")
                    .auth(crate::VaultAuth::Token(crate::SecretString::new("t")))
                    .build()
                    .unwrap(),
                "t",
            )
            .unwrap(),
        ),
        renew_at: Some(at),
        renewable: true,
        renew_failures: 0,
    };
    assert!(!login.due_at(now + Duration::from_secs(74)));
    assert!(login.due_at(now + Duration::from_secs(75)));
    let waits: Vec<u64> = (1..=10)
        .map(|n| renewal_backoff(n).as_millis() as u64)
        .collect();
    assert_eq!(
        waits,
        [
            500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 64000, 64000
        ]
    );
}
