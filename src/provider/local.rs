//! `local://<path>`: a KEK in a local file. For development, tests and the demo only.
//!
//! The KEK is 32 random bytes in a file only its owner can read (mode 0600;
//! anything looser is refused). Data keys are wrapped with AES-256-GCM under
//! it, with the wrap context as associated data, so a wrapped key only opens
//! for the keyset and entry it was made for. Not for production: the KEK sits
//! on the same disk as the service, unlike a KMS key that never leaves the KMS.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

use super::{BoxFuture, DataKey, ErrorClass, KeyProvider, WrapContext, kms_error};
use crate::error::{Error, ProviderError};
use crate::secret::Secret;

const NONCE_LEN: usize = 12;
const KEY_LEN: usize = 32;

/// The embedded `local` provider.
///
/// ```no_run
/// use stateseal::LocalProvider;
/// LocalProvider::create_kek("/var/lib/stateseal/kek.bin")?; // mode 0600, refuses to overwrite
/// # Ok::<(), stateseal::Error>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct LocalProvider;

fn err(class: ErrorClass, detail: impl Into<String>) -> Error {
    kms_error(LocalProvider::SCHEME, class, detail)
}

impl LocalProvider {
    /// URI scheme of this provider.
    pub const SCHEME: &'static str = "local";

    /// The provider.
    pub fn new() -> Self {
        Self
    }

    /// Creates a new random KEK file with mode 0600. Refuses to overwrite one.
    ///
    /// # Errors
    /// [`ProviderError::Kms`] (class `Config`) when the file exists or cannot be written.
    pub fn create_kek(path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let kek = Secret::generate()?;
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                err(
                    ErrorClass::Config,
                    format!("cannot create KEK file {}: {e}", path.display()),
                )
            })?;
        f.write_all(kek.expose())
            .and_then(|()| f.sync_all())
            .map_err(|e| {
                err(
                    ErrorClass::Config,
                    format!("cannot write KEK file {}: {e}", path.display()),
                )
            })
    }

    /// The KEK file path of a `local://<path>` URI.
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`].
    pub fn kek_path(kek_uri: &str) -> Result<&Path, Error> {
        match kek_uri.strip_prefix("local://") {
            Some(p) if !p.is_empty() => Ok(Path::new(p)),
            _ => Err(Error::Provider(ProviderError::InvalidUri {
                uri: kek_uri.to_owned(),
                problem: "expected local://<path of a 32-byte key file>".into(),
            })),
        }
    }

    fn load_kek(kek_uri: &str) -> Result<LessSafeKey, Error> {
        let path = Self::kek_path(kek_uri)?;
        let meta = fs::metadata(path).map_err(|e| {
            err(
                ErrorClass::Config,
                format!(
                    "KEK file {} is unreadable ({e}); create it with `stateseal init`",
                    path.display()
                ),
            )
        })?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(err(
                ErrorClass::Config,
                format!(
                    "KEK file {} is readable by others; run chmod 600 on it",
                    path.display()
                ),
            ));
        }
        let bytes = Secret::new(fs::read(path).map_err(|e| {
            err(
                ErrorClass::Config,
                format!("cannot read KEK file {}: {e}", path.display()),
            )
        })?)
        .map_err(|_| {
            err(
                ErrorClass::Config,
                format!("KEK file {} must hold exactly 32 bytes", path.display()),
            )
        })?;
        if bytes.len() != KEY_LEN {
            return Err(err(
                ErrorClass::Config,
                format!("KEK file {} must hold exactly 32 bytes", path.display()),
            ));
        }
        UnboundKey::new(&AES_256_GCM, bytes.expose())
            .map(LessSafeKey::new)
            .map_err(|_| err(ErrorClass::Config, "KEK is not a valid AES-256 key"))
    }
}

impl KeyProvider for LocalProvider {
    fn scheme(&self) -> &'static str {
        Self::SCHEME
    }

    fn generate<'a>(
        &'a self,
        kek: &'a str,
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<DataKey, Error>> {
        Box::pin(async move {
            let key = Self::load_kek(kek)?;
            let plaintext = Secret::generate()?;
            let mut nonce = [0u8; NONCE_LEN];
            crate::random::fill_os(&mut nonce)?;
            let mut wrapped = nonce.to_vec();
            wrapped.extend_from_slice(plaintext.expose());
            let tag = key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(ctx.associated_data()),
                    &mut wrapped[NONCE_LEN..],
                )
                .map_err(|_| err(ErrorClass::Invalid, "wrapping failed"))?;
            wrapped.extend_from_slice(tag.as_ref());
            Ok(DataKey { plaintext, wrapped })
        })
    }

    fn unwrap<'a>(
        &'a self,
        kek: &'a str,
        wrapped: &'a [u8],
        ctx: WrapContext<'a>,
    ) -> BoxFuture<'a, Result<Secret, Error>> {
        Box::pin(async move {
            let key = Self::load_kek(kek)?;
            if wrapped.len() != NONCE_LEN + KEY_LEN + 16 {
                return Err(err(ErrorClass::Invalid, "wrapped key has the wrong length"));
            }
            let mut nonce = [0u8; NONCE_LEN];
            nonce.copy_from_slice(&wrapped[..NONCE_LEN]);
            let mut buf = wrapped[NONCE_LEN..].to_vec();
            let opened = key
                .open_in_place(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(ctx.associated_data()),
                    &mut buf,
                )
                .map(|p| p.to_vec());
            zeroize::Zeroize::zeroize(&mut buf);
            let plain = opened.map_err(|_| {
                err(
                    ErrorClass::Invalid,
                    "wrapped key does not open under this KEK for this keyset and entry",
                )
            })?;
            Secret::new(plain)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn wrap_binds_context_and_refuses_loose_files() {
        let dir = std::env::temp_dir().join(format!("stateseal-local-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kek.bin");
        let _ = fs::remove_file(&path);
        LocalProvider::create_kek(&path).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(
            LocalProvider::create_kek(&path).is_err(),
            "never overwrites a KEK"
        );
        let uri = format!("local://{}", path.display());
        let p = LocalProvider::new();
        let ctx = WrapContext {
            keyset_id: "ks_a",
            entry_id: "k_1",
        };
        let dk = p.generate(&uri, ctx).await.unwrap();
        let back = p.unwrap(&uri, &dk.wrapped, ctx).await.unwrap();
        assert_eq!(back.expose(), dk.plaintext.expose());
        let moved = p
            .unwrap(
                &uri,
                &dk.wrapped,
                WrapContext {
                    keyset_id: "ks_a",
                    entry_id: "k_2",
                },
            )
            .await
            .unwrap_err();
        assert_eq!(moved.kms_class(), Some(ErrorClass::Invalid));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let loose = p.unwrap(&uri, &dk.wrapped, ctx).await.unwrap_err();
        assert_eq!(loose.kms_class(), Some(ErrorClass::Config));
        assert!(loose.to_string().contains("chmod 600"));
        let missing = p
            .generate("local:///nonexistent/kek", ctx)
            .await
            .unwrap_err();
        assert!(missing.to_string().contains("stateseal init"), "{missing}");
        fs::remove_dir_all(dir).unwrap();
    }
}
