use super::*;

fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    }
}

#[test]
fn env_and_checks() {
    let c = AzureKvConfig::from_vars(vars(&[
        ("STATESEAL_AZURE_KV_ENDPOINT", "https://127.0.0.1:9443"),
        ("STATESEAL_AZURE_CREDENTIALS", "anonymous"),
        ("STATESEAL_AZURE_KV_CA_FILE", "/tmp/ca.pem"),
    ]))
    .unwrap();
    assert_eq!(c.credential(), AzureCredentialKind::Anonymous);
    assert_eq!(c.ca_file(), Some(std::path::Path::new("/tmp/ca.pem")));
    let wi = AzureKvConfig::from_vars(vars(&[(
        "STATESEAL_AZURE_CREDENTIALS",
        "workload-identity",
    )]))
    .unwrap();
    assert_eq!(wi.credential(), AzureCredentialKind::WorkloadIdentity);
    assert!(
        AzureKvConfig::from_vars(vars(&[(
            "STATESEAL_AZURE_KV_ENDPOINT",
            "https://eu.managedhsm.azure.net"
        )]))
        .is_ok()
    );

    let cases: [(&[(&str, &str)], &str); 5] = [
        (
            &[("STATESEAL_AZURE_CREDENTIALS", "token")],
            "STATESEAL_AZURE_CREDENTIALS=\"token\"",
        ),
        (
            &[("STATESEAL_AZURE_KV_ENDPOINT", "http://127.0.0.1:9443")],
            "over TLS only",
        ),
        (
            &[(
                "STATESEAL_AZURE_KV_ENDPOINT",
                "https://proxy.example.invalid",
            )],
            "STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1",
        ),
        (
            &[("STATESEAL_AZURE_CREDENTIALS", "anonymous")],
            "loopback endpoint",
        ),
        (
            &[
                (
                    "STATESEAL_AZURE_KV_ENDPOINT",
                    "https://proxy.example.invalid",
                ),
                ("STATESEAL_ALLOW_CUSTOM_ENDPOINTS", "1"),
                ("STATESEAL_AZURE_CREDENTIALS", "anonymous"),
            ],
            "loopback endpoint",
        ),
    ];
    for (pairs, says) in cases {
        let e = AzureKvConfig::from_vars(vars(pairs)).unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{pairs:?}");
        assert!(e.to_string().contains(says), "{pairs:?}: {e}");
    }
    assert!(
        AzureKvConfig::from_vars(vars(&[
            (
                "STATESEAL_AZURE_KV_ENDPOINT",
                "https://proxy.example.invalid"
            ),
            ("STATESEAL_ALLOW_CUSTOM_ENDPOINTS", "1"),
        ]))
        .is_ok()
    );
    assert!(AzureKvConfig::builder().max_attempts(0).build().is_err());
}

#[test]
fn a_key_uri_names_a_managed_hsm_host_unless_allowed() {
    let plain = AzureKvConfig::builder().build().unwrap();
    assert_eq!(
        plain.endpoint_for("contoso.managedhsm.azure.net").unwrap(),
        "https://contoso.managedhsm.azure.net"
    );
    let e = plain.endpoint_for("vault").unwrap_err();
    assert!(
        e.to_string().contains("STATESEAL_ALLOW_CUSTOM_ENDPOINTS=1"),
        "{e}"
    );
    let allowed = AzureKvConfig::builder()
        .allow_custom_endpoint(true)
        .build()
        .unwrap();
    assert_eq!(
        allowed.endpoint_for("hsm.example.invalid").unwrap(),
        "https://hsm.example.invalid"
    );
    let overridden = AzureKvConfig::builder()
        .endpoint("https://127.0.0.1:9")
        .build()
        .unwrap();
    assert_eq!(
        overridden.endpoint_for("vault").unwrap(),
        "https://127.0.0.1:9"
    );
}

#[test]
fn loopback_means_an_ip_literal_over_tls() {
    assert!(is_loopback_https("https://127.0.0.1:8443"));
    assert!(is_loopback_https("https://[::1]:8443/"));
    for no in [
        "http://127.0.0.1:8443",
        "https://localhost:8443",
        "https://127.0.0.1.example.invalid",
        "https://u@127.0.0.1",
    ] {
        assert!(!is_loopback_https(no), "{no}");
    }
}
