//! `azure-kv://<hsm>.managedhsm.azure.net/keys/<name>[/<version>]`.
//!
//! Data keys are 32 bytes from the OS CSPRNG, wrapped with the HSM's
//! `encrypt` and unwrapped with `decrypt`, both A256GCM with the wrap context
//! as associated data (`aad`): a wrap moved to another keyset or entry fails
//! to authenticate in the HSM. The key's type is checked before the first
//! wrap: only an AES key (`oct-HSM`) is accepted, with the reason when not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use azure_core::http::{ClientOptions, ExponentialRetryOptions, RetryOptions, Transport};
use azure_security_keyvault_keys::models::{
    KeyClientDecryptOptions, KeyClientEncryptOptions, KeyClientGetKeyOptions, KeyType,
};
use azure_security_keyvault_keys::{KeyClient, KeyClientOptions};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use bytes::Bytes;
use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext};
use stateseal::{Error, Secret};
use zeroize::Zeroizing;

use crate::answer::{OperationResult, classify, decode, err, version_of, wipe};
use crate::config::AzureKvConfig;
use crate::key::{HsmKeyName, RSA_REFUSAL};
use crate::wrapped::Wrapped;

/// The `azure-kv` key provider. Build it with [`crate::register`] or [`AzureKvProvider::new`].
pub struct AzureKvProvider {
    config: Result<AzureKvConfig, String>,
    /// One client per HSM endpoint.
    clients: Mutex<HashMap<String, Arc<KeyClient>>>,
    /// Keys (URI) whose type was found to be AES.
    checked: Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for AzureKvProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureKvProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AzureKvProvider {
    /// A provider (clients are built on first use).
    pub fn new(config: AzureKvConfig) -> Self {
        Self {
            config: Ok(config),
            clients: Mutex::default(),
            checked: Mutex::default(),
        }
    }

    /// A provider whose every call fails with this configuration error.
    pub(crate) fn misconfigured(problem: String) -> Self {
        Self {
            config: Err(problem),
            clients: Mutex::default(),
            checked: Mutex::default(),
        }
    }

    fn config(&self) -> Result<&AzureKvConfig, Error> {
        self.config
            .as_ref()
            .map_err(|p| err(ErrorClass::Config, p.clone()))
    }

    fn client(&self, key: &HsmKeyName) -> Result<Arc<KeyClient>, Error> {
        let config = self.config()?;
        let endpoint = config.endpoint_for(key.host()).map_err(|e| match e {
            Error::Config(m) => err(ErrorClass::Config, m),
            other => other,
        })?;
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = clients.get(&endpoint) {
            return Ok(c.clone());
        }
        let config_error =
            |what: &str, e: &dyn std::fmt::Display| err(ErrorClass::Config, format!("{what}: {e}"));
        let mut http = reqwest::Client::builder()
            .https_only(true)
            .timeout(config.attempt_timeout());
        if let Some(path) = config.ca_file() {
            let pem = std::fs::read(path).map_err(|e| {
                config_error(
                    &format!("STATESEAL_AZURE_KV_CA_FILE {}", path.display()),
                    &e,
                )
            })?;
            let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                config_error(
                    &format!(
                        "STATESEAL_AZURE_KV_CA_FILE {}: not a PEM bundle",
                        path.display()
                    ),
                    &e,
                )
            })?;
            http = http.tls_certs_merge(roots);
        }
        let http = http
            .build()
            .map_err(|e| config_error("cannot build the HTTP client", &e))?;
        let credential = crate::credential::credential(config.credential(), &|k: &str| {
            std::env::var(k).ok().filter(|v| !v.is_empty())
        })
        .map_err(|e| config_error("cannot build the Azure credential", &e))?;
        let options = KeyClientOptions {
            client_options: ClientOptions {
                retry: RetryOptions::exponential(ExponentialRetryOptions {
                    initial_delay: azure_core::time::Duration::milliseconds(100),
                    max_delay: azure_core::time::Duration::seconds(2),
                    max_retries: config.max_attempts() - 1,
                    ..Default::default()
                }),
                transport: Some(Transport::new(Arc::new(http))),
                ..Default::default()
            },
            // The HSM's challenge names managedhsm.azure.net, which an override's host is not.
            verify_challenge_resource: Some(config.endpoint().is_none()),
            ..Default::default()
        };
        let client = Arc::new(
            KeyClient::new(&endpoint, credential, Some(options))
                .map_err(|e| config_error("cannot build the Key Vault client", &e))?,
        );
        clients.insert(endpoint, client.clone());
        Ok(client)
    }

    /// Refuses any key but an AES one (checked once per key URI).
    async fn check_key_type(
        &self,
        kek: &str,
        key: &HsmKeyName,
        client: &KeyClient,
    ) -> Result<(), Error> {
        let seen = |set: &Mutex<std::collections::HashSet<String>>| {
            set.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(kek)
        };
        if seen(&self.checked) {
            return Ok(());
        }
        let options = KeyClientGetKeyOptions {
            key_version: key.version().map(str::to_owned),
            ..Default::default()
        };
        let found = client
            .get_key(key.name(), Some(options))
            .await
            .map_err(|e| classify("GetKey", &e))?
            .into_model()
            .map_err(|e| classify("GetKey", &e))?;
        match found.key.and_then(|k| k.kty) {
            Some(KeyType::OctHsm | KeyType::Oct) => {}
            other => {
                let kty = match other {
                    Some(KeyType::Rsa) => "RSA",
                    Some(KeyType::RsaHsm) => "RSA-HSM",
                    Some(KeyType::Ec) => "EC",
                    Some(KeyType::EcHsm) => "EC-HSM",
                    _ => "not an AES key",
                };
                return Err(err(
                    ErrorClass::Config,
                    format!("key {} is {kty}: {RSA_REFUSAL}", key.name()),
                ));
            }
        }
        self.checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(kek.to_owned());
        Ok(())
    }

    async fn generate_key(&self, kek: &str, ctx: WrapContext<'_>) -> Result<DataKey, Error> {
        let key = HsmKeyName::parse(kek)?;
        let client = self.client(&key)?;
        self.check_key_type(kek, &key, &client).await?;
        let plaintext = Secret::generate()?;
        let aad = B64URL.encode(ctx.associated_data());
        let mut body = Zeroizing::new(String::with_capacity(128));
        body.push_str(r#"{"alg":"A256GCM","value":""#);
        B64URL.encode_string(plaintext.expose(), &mut body);
        body.push_str(r#"","aad":""#);
        body.push_str(&aad);
        body.push_str(r#""}"#);
        // Kept so the copy handed to the client can be wiped once it is done with it.
        let request = Bytes::copy_from_slice(body.as_bytes());
        let options = KeyClientEncryptOptions {
            key_version: key.version().map(str::to_owned),
            ..Default::default()
        };
        let response = client
            .encrypt(key.name(), request.clone().into(), Some(options))
            .await;
        wipe(request);
        let body = Bytes::from(response.map_err(|e| classify("Encrypt", &e))?.into_body());
        let result: OperationResult = serde_json::from_slice(&body).map_err(|_| {
            err(
                ErrorClass::Transient,
                "Encrypt: the answer is not Key Vault's JSON; it was discarded",
            )
        })?;
        let version = result
            .kid
            .as_deref()
            .and_then(|kid| version_of(kid, key.name()))
            .filter(|v| key.version().is_none_or(|pinned| pinned == *v))
            .ok_or_else(|| {
                err(
                    ErrorClass::Transient,
                    "Encrypt: the answer names another key; it was discarded",
                )
            })?;
        let ciphertext = decode(result.value.as_deref(), "ciphertext", "Encrypt")?;
        let iv = decode(result.iv.as_deref(), "iv", "Encrypt")?;
        let tag = decode(result.tag.as_deref(), "tag", "Encrypt")?;
        let wrapped = Wrapped {
            version,
            iv: &iv,
            tag: &tag,
            ciphertext: &ciphertext,
        }
        .encode()?;
        Ok(DataKey { plaintext, wrapped })
    }

    async fn decrypt(
        &self,
        kek: &str,
        wrapped: &[u8],
        ctx: WrapContext<'_>,
    ) -> Result<Secret, Error> {
        let key = HsmKeyName::parse(kek)?;
        let w = Wrapped::decode(wrapped)?;
        let client = self.client(&key)?;
        let body = format!(
            r#"{{"alg":"A256GCM","value":"{}","iv":"{}","tag":"{}","aad":"{}"}}"#,
            B64URL.encode(w.ciphertext),
            B64URL.encode(w.iv),
            B64URL.encode(w.tag),
            B64URL.encode(ctx.associated_data()),
        );
        let response = client
            .decrypt(
                key.name(),
                w.version,
                Bytes::from(body).into(),
                None::<KeyClientDecryptOptions<'_>>,
            )
            .await
            .map_err(|e| classify("Decrypt", &e))?;
        let body = Bytes::from(response.into_body());
        let parsed = serde_json::from_slice::<OperationResult>(&body);
        wipe(body);
        let result = parsed.map_err(|_| {
            err(
                ErrorClass::Transient,
                "Decrypt: the answer is not Key Vault's JSON; it was discarded",
            )
        })?;
        let plaintext = decode(result.value.as_deref(), "plaintext", "Decrypt")?;
        if plaintext.len() != 32 {
            return Err(err(
                ErrorClass::Invalid,
                format!(
                    "Decrypt returned a {}-byte data key, not 32",
                    plaintext.len()
                ),
            ));
        }
        Secret::from_slice(&plaintext)
    }
}

impl KeyProvider for AzureKvProvider {
    fn scheme(&self) -> &'static str {
        crate::SCHEME
    }

    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(self.generate_key(kek, ctx))
    }

    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(self.decrypt(kek, wrapped, ctx))
    }
    // A standard vault's host, in a full URI or a pinned prefix.
    fn check_kek(&self, kek: &str) -> Result<(), Error> {
        crate::key::refuse_standard_vault(kek)
    }
}
