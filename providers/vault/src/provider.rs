//! `hcvault://<transit mount>/keys/<name>`: data keys from Vault transit.
//!
//! Generation calls `datakey/plaintext` (one round trip: Vault's CSPRNG makes
//! the key and returns it with its wrap); unwrapping calls `decrypt`. Both
//! pass the wrap context as the **derivation context** of a derived transit
//! key, so a wrap only opens for the keyset and entry it was made for.
//!
//! Transit silently ignores a context on a key created without
//! `derived=true`, which would drop that binding. The first generation or
//! unwrap under each KEK therefore proves the binding: it decrypts the wrap
//! under a different context and refuses the key if Vault accepts (class
//! `Config` when generating, `Invalid` when unwrapping: a document naming such
//! a key, e.g. one an attacker chose under a prefix pin, is refused). The
//! answer is kept per KEK, so later calls cost no probe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use stateseal::provider::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, kms_error};
use stateseal::{Error, ProviderError, Secret};
use vaultrs::api::transit::requests::{
    DataKeyType, DecryptDataRequestBuilder, GenerateDataKeyRequestBuilder,
};
use zeroize::{Zeroize, Zeroizing};

use crate::session::{CallError, Session, class_of};

const KEY_LEN: usize = 32;

/// A parsed `hcvault://<mount>/keys/<name>` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitKey {
    /// The transit mount path (may contain `/`).
    pub mount: String,
    /// The key name.
    pub name: String,
}

impl TransitKey {
    /// Parses a KEK URI.
    ///
    /// ```
    /// use stateseal_vault::TransitKey;
    /// let k = TransitKey::parse("hcvault://transit/keys/stateseal")?;
    /// assert_eq!((k.mount.as_str(), k.name.as_str()), ("transit", "stateseal"));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] when the URI is not `hcvault://<mount>/keys/<name>`.
    pub fn parse(uri: &str) -> Result<Self, Error> {
        let bad = || {
            Error::Provider(ProviderError::InvalidUri {
                uri: uri.to_owned(),
                problem: "expected hcvault://<transit mount>/keys/<key name>".into(),
            })
        };
        let rest = uri.strip_prefix("hcvault://").ok_or_else(bad)?;
        let (mount, name) = rest.rsplit_once("/keys/").ok_or_else(bad)?;
        let ok = |s: &str| {
            !s.is_empty()
                && s.split('/')
                    .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
        };
        if !ok(mount) || !ok(name) || name.contains('/') {
            return Err(bad());
        }
        Ok(Self {
            mount: mount.to_owned(),
            name: name.to_owned(),
        })
    }
}

/// The `hcvault` key provider. Build it with [`crate::register`] or [`VaultTransitProvider::new`].
#[derive(Debug)]
pub struct VaultTransitProvider {
    session: Arc<Session>,
    /// Per KEK URI, whether transit binds the context (the probe's answer).
    binding: Mutex<HashMap<String, bool>>,
}

fn decode_key(b64: &mut String) -> Result<Secret, Error> {
    let decoded = STANDARD.decode(b64.as_bytes()).map(Zeroizing::new);
    b64.zeroize();
    let bytes = decoded.map_err(|_| {
        kms_error(
            crate::SCHEME,
            ErrorClass::Invalid,
            "Vault returned a data key that is not base64",
        )
    })?;
    if bytes.len() != KEY_LEN {
        return Err(kms_error(
            crate::SCHEME,
            ErrorClass::Invalid,
            format!("Vault returned a {}-byte data key, not 32", bytes.len()),
        ));
    }
    Secret::from_slice(&bytes)
}

/// A transit key that ignores the derivation context, refused with `class`.
fn unbound(kek: &str, class: ErrorClass) -> Error {
    kms_error(
        crate::SCHEME,
        class,
        format!(
            "transit key {kek} ignores the derivation context, so wrapped keys would not be \
             bound to their keyset; create it with derived=true"
        ),
    )
}

impl VaultTransitProvider {
    pub(crate) fn with_session(session: Arc<Session>) -> Self {
        Self {
            session,
            binding: Mutex::new(HashMap::new()),
        }
    }

    /// A provider with its own Vault session.
    pub fn new(config: crate::VaultConfig) -> Self {
        Self::with_session(Arc::new(Session::new(Ok(config))))
    }

    /// How often this provider's session logged in to Vault and renewed its token.
    pub fn auth_stats(&self) -> crate::AuthStats {
        self.session.stats()
    }

    async fn generate_key(&self, kek: &str, ctx: WrapContext<'_>) -> Result<DataKey, Error> {
        let key = TransitKey::parse(kek)?;
        if self.binds(kek) == Some(false) {
            return Err(unbound(kek, ErrorClass::Config));
        }
        let context = STANDARD.encode(ctx.associated_data());
        let resp = self
            .session
            .call(crate::SCHEME, "datakey", |client| {
                let (key, context) = (&key, context.clone());
                async move {
                    vaultrs::transit::generate::data_key(
                        &*client,
                        &key.mount,
                        &key.name,
                        DataKeyType::Plaintext,
                        Some(
                            GenerateDataKeyRequestBuilder::default()
                                .context(context)
                                .bits(256u16),
                        ),
                    )
                    .await
                }
            })
            .await
            .map_err(|e| e.into_error(crate::SCHEME, "datakey"))?;
        let mut resp = resp;
        let mut b64 = resp.plaintext.take().ok_or_else(|| {
            kms_error(
                crate::SCHEME,
                ErrorClass::Invalid,
                "Vault returned no plaintext data key",
            )
        })?;
        let plaintext = decode_key(&mut b64)?;
        let wrapped = resp.ciphertext.into_bytes();
        self.check_binding(kek, &key, &wrapped, ctx, ErrorClass::Config)
            .await?;
        Ok(DataKey { plaintext, wrapped })
    }

    async fn unwrap_key(
        &self,
        kek: &str,
        wrapped: &[u8],
        ctx: WrapContext<'_>,
    ) -> Result<Secret, Error> {
        let key = TransitKey::parse(kek)?;
        if self.binds(kek) == Some(false) {
            return Err(unbound(kek, ErrorClass::Invalid));
        }
        let plaintext = self
            .decrypt(&key, wrapped, ctx)
            .await
            .map_err(|e| e.into_error(crate::SCHEME, "decrypt"))?;
        // Only a wrap that opened proves anything: probe with it.
        self.check_binding(kek, &key, wrapped, ctx, ErrorClass::Invalid)
            .await?;
        Ok(plaintext)
    }

    /// What the probe found for `kek` (`None`: not probed yet).
    fn binds(&self, kek: &str) -> Option<bool> {
        self.binding.lock().ok()?.get(kek).copied()
    }

    /// Proves, once per KEK, that transit binds the context (the key is
    /// derived): `wrapped`, which opens under `ctx`, must not open under
    /// another. A key that ignores the context is refused with `class`.
    async fn check_binding(
        &self,
        kek: &str,
        key: &TransitKey,
        wrapped: &[u8],
        ctx: WrapContext<'_>,
        class: ErrorClass,
    ) -> Result<(), Error> {
        match self.binds(kek) {
            Some(true) => return Ok(()),
            Some(false) => return Err(unbound(kek, class)),
            None => {}
        }
        let probe_entry = format!("{}~binding-probe", ctx.entry_id);
        let probe = WrapContext {
            keyset_id: ctx.keyset_id,
            entry_id: &probe_entry,
        };
        let binds = match self.decrypt(key, wrapped, probe).await {
            Ok(_) => false,
            Err(CallError::Vault(e)) if class_of(&e) == ErrorClass::Invalid => true,
            Err(e) => return Err(e.into_error(crate::SCHEME, "decrypt (binding check)")),
        };
        if let Ok(mut known) = self.binding.lock() {
            known.insert(kek.to_owned(), binds);
        }
        if binds {
            Ok(())
        } else {
            Err(unbound(kek, class))
        }
    }

    async fn decrypt(
        &self,
        key: &TransitKey,
        wrapped: &[u8],
        ctx: WrapContext<'_>,
    ) -> Result<Secret, CallError> {
        let ciphertext = std::str::from_utf8(wrapped)
            .ok()
            .filter(|c| c.starts_with("vault:v") && !c.contains(char::is_whitespace))
            .ok_or_else(|| {
                CallError::Setup(kms_error(
                    crate::SCHEME,
                    ErrorClass::Invalid,
                    "the wrapped key is not a transit ciphertext (vault:v<N>:…)",
                ))
            })?;
        let context = STANDARD.encode(ctx.associated_data());
        let resp = self
            .session
            .call(crate::SCHEME, "decrypt", |client| {
                let context = context.clone();
                async move {
                    vaultrs::transit::data::decrypt(
                        &*client,
                        &key.mount,
                        &key.name,
                        ciphertext,
                        Some(DecryptDataRequestBuilder::default().context(context)),
                    )
                    .await
                }
            })
            .await?;
        let mut b64 = resp.plaintext;
        decode_key(&mut b64).map_err(CallError::Setup)
    }
}

impl KeyProvider for VaultTransitProvider {
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
        Box::pin(self.unwrap_key(kek, wrapped, ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kek_uris() {
        let k = TransitKey::parse("hcvault://team/transit/keys/mcp-state").unwrap();
        assert_eq!(k.mount, "team/transit");
        assert_eq!(k.name, "mcp-state");
        for bad in [
            "hcvault://transit/mcp",
            "hcvault:///keys/x",
            "hcvault://transit/keys/",
            "hcvault://transit/keys/a/b",
            "hcvault://../keys/x",
            "hcvault://tr ansit/keys/x",
            "vault://transit/keys/x",
        ] {
            assert!(
                matches!(
                    TransitKey::parse(bad),
                    Err(Error::Provider(ProviderError::InvalidUri { .. }))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn data_keys_are_checked_and_the_response_wiped() {
        let mut b64 = STANDARD.encode([7u8; 32]);
        let k = decode_key(&mut b64).unwrap();
        assert_eq!(k.expose(), &[7u8; 32]);
        assert!(b64.is_empty());
        let mut short = STANDARD.encode([7u8; 16]);
        let e = decode_key(&mut short).unwrap_err().to_string();
        assert!(e.contains("16-byte"), "{e}");
        let mut junk = "!!".to_owned();
        assert!(decode_key(&mut junk).is_err());
    }
}
