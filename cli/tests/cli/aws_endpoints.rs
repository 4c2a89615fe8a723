//! Every place the AWS SDK takes a KMS endpoint from is checked like the
//! builder's: plain HTTP only to loopback, wherever it was set (data keys
//! travel over it). The refused hosts are `.invalid`: nothing is sent.

use crate::member::T0;
use crate::moto::Moto;
use crate::{json_of, stateseal_with, text};

#[test]
fn kms_endpoints_from_the_environment_or_a_profile_are_checked() {
    let dir = crate::scratch("aws-endpoints");
    let moto = Moto::start(&dir);
    let (key_arn, _, _) = moto.create_key("stateseal");
    let kek = format!("aws-kms://{key_arn}");
    let store = format!("file://{}", dir.join("keyset.json").display());
    let good: Vec<(&str, String)> = moto.env();
    let pairs: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let init = json_of(&stateseal_with(
        &[
            "init",
            "--kek",
            &kek,
            "--store",
            &store,
            "--now",
            &T0.to_string(),
            "--allow-clock-override",
            "--json",
        ],
        &pairs,
        None,
    ));
    assert!(init["kid"].is_string(), "{init}");
    let at = (T0 + 10.0).to_string();
    let ok = stateseal_with(&["status", "--store", &store, "--now", &at], &pairs, None);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));

    let profile = dir.join("aws-config");
    std::fs::write(
        &profile,
        "[default]\nendpoint_url = http://kms.invalid:4566\n",
    )
    .expect("profile");
    let profile = profile.display().to_string();
    let without_endpoint: Vec<(&str, &str)> = pairs
        .iter()
        .copied()
        .filter(|(k, _)| *k != "AWS_ENDPOINT_URL")
        .collect();
    for (extra, says) in [
        (
            vec![("AWS_ENDPOINT_URL_KMS", "http://kms.invalid:4566")],
            "AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL or the profile",
        ),
        (
            vec![("AWS_ENDPOINT_URL", "http://kms.invalid:4566")],
            "AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL or the profile",
        ),
        (
            vec![("AWS_CONFIG_FILE", profile.as_str())],
            "AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL or the profile",
        ),
    ] {
        let mut envs = without_endpoint.clone();
        envs.extend(extra.iter().copied());
        let before = std::fs::read(dir.join("keyset.json")).expect("keyset");
        let out = stateseal_with(&["status", "--store", &store, "--now", &at], &envs, None);
        let err = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_ne!(out.status.code(), Some(0), "{extra:?}: {err}");
        assert!(
            err.contains("kms.invalid") && err.contains("must be https") && err.contains(says),
            "{extra:?}: {err}"
        );
        assert_eq!(
            std::fs::read(dir.join("keyset.json")).expect("keyset"),
            before
        );
    }
}
