//! `azure-kv://<host>/keys/<name>[/<version>]`, and why only a Managed HSM host.

use stateseal::{Error, ProviderError};

/// Hosts of standard Key Vaults (public cloud and sovereign clouds). They
/// hold RSA and EC keys only: an RSA-OAEP wrap is made with the public key, so
/// anyone who can read that key could wrap a MAC key of their own choosing and
/// the keyset would accept it. Nothing binds the wrap to its keyset or entry.
const STANDARD_VAULT_SUFFIXES: [&str; 4] = [
    ".vault.azure.net",
    ".vault.azure.cn",
    ".vault.usgovcloudapi.net",
    ".vault.microsoftazure.de",
];

/// Why an RSA key cannot hold a keyset, and what to use instead (short
/// enough to survive a one-line summary).
pub(crate) const RSA_REFUSAL: &str = "an RSA-OAEP wrap is made with the public key, so anyone who can read it could wrap a MAC key of their own; use a Managed HSM AES-256 key (oct-HSM)";

/// Refuses a URI or prefix whose host is a standard vault's (the rest of a
/// prefix is not checked: it may end anywhere).
pub(crate) fn refuse_standard_vault(uri: &str) -> Result<(), Error> {
    let host = uri
        .strip_prefix("azure-kv://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if STANDARD_VAULT_SUFFIXES.iter().any(|s| host.ends_with(s)) {
        return Err(Error::Provider(ProviderError::InvalidUri {
            uri: uri.to_owned(),
            problem: format!("a standard Key Vault holds RSA and EC keys: {RSA_REFUSAL}"),
        }));
    }
    Ok(())
}

/// A parsed `azure-kv://` KEK URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HsmKeyName {
    host: String,
    name: String,
    version: Option<String>,
}

impl HsmKeyName {
    /// Parses a KEK URI, refusing standard Key Vault hosts with the reason.
    ///
    /// ```
    /// use stateseal_azure_kv::HsmKeyName;
    /// let k = HsmKeyName::parse("azure-kv://contoso.managedhsm.azure.net/keys/stateseal")?;
    /// assert_eq!((k.host(), k.name(), k.version()), ("contoso.managedhsm.azure.net", "stateseal", None));
    /// let rsa = HsmKeyName::parse("azure-kv://contoso.vault.azure.net/keys/k").unwrap_err();
    /// assert!(rsa.to_string().contains("use a Managed HSM AES-256 key"));
    /// # Ok::<(), stateseal::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ProviderError::InvalidUri`] for anything else, and for a standard vault's host.
    pub fn parse(uri: &str) -> Result<Self, Error> {
        let bad = |problem: &str| {
            Error::Provider(ProviderError::InvalidUri {
                uri: uri.to_owned(),
                problem: problem.to_owned(),
            })
        };
        let shape = "expected azure-kv://<hsm>.managedhsm.azure.net/keys/<name>[/<version>]";
        let rest = uri.strip_prefix("azure-kv://").ok_or_else(|| bad(shape))?;
        let parts: Vec<&str> = rest.split('/').collect();
        let (host, name, version) = match parts[..] {
            [host, "keys", name] => (host, name, None),
            [host, "keys", name, version] => (host, name, Some(version)),
            _ => return Err(bad(shape)),
        };
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        // Key Vault names keys and versions with letters, digits and dashes only.
        let id_ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 127
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if !host_ok || !id_ok(name) || !version.is_none_or(id_ok) {
            return Err(bad(shape));
        }
        refuse_standard_vault(uri)?;
        let host = host.to_ascii_lowercase();
        Ok(Self {
            host,
            name: name.to_owned(),
            version: version.map(str::to_owned),
        })
    }

    /// The HSM's host name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key version the URI pins, if any (else new wraps use the current version).
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names() {
        let k =
            HsmKeyName::parse("azure-kv://Contoso.managedhsm.azure.net/keys/k-1/0a1b2c").unwrap();
        assert_eq!(k.host(), "contoso.managedhsm.azure.net");
        assert_eq!(k.version(), Some("0a1b2c"));
        for bad in [
            "azure-kv://contoso.managedhsm.azure.net/keys",
            "azure-kv://contoso.managedhsm.azure.net/keys/",
            "azure-kv://contoso.managedhsm.azure.net/secrets/k",
            "azure-kv://contoso.managedhsm.azure.net/keys/k/v/x",
            "azure-kv://contoso.managedhsm.azure.net/keys/k_1",
            "azure-kv://contoso.managedhsm.azure.net:443/keys/k",
            "azure-kv://user@contoso.managedhsm.azure.net/keys/k",
            "azure-kv:///keys/k",
            "azure-kv://contoso..net/keys/k",
            "azure-kv://contoso.managedhsm.azure.net/keys/k?api-version=1",
            "gcp-kms://contoso.managedhsm.azure.net/keys/k",
        ] {
            let e = HsmKeyName::parse(bad).unwrap_err();
            assert!(e.to_string().contains("expected azure-kv://"), "{bad}: {e}");
        }
    }

    #[test]
    fn pinned_prefixes_of_standard_vaults_are_refused() {
        assert!(refuse_standard_vault("azure-kv://contoso.vault.azure.net/").is_err());
        assert!(refuse_standard_vault("azure-kv://contoso.vault.azure.net/keys/").is_err());
        assert!(refuse_standard_vault("azure-kv://contoso.managedhsm.azure.net/keys/").is_ok());
    }

    #[test]
    fn standard_vaults_are_refused_with_the_reason() {
        for host in [
            "contoso.vault.azure.net",
            "CONTOSO.VAULT.AZURE.NET",
            "c.vault.azure.cn",
            "c.vault.usgovcloudapi.net",
        ] {
            let e = HsmKeyName::parse(&format!("azure-kv://{host}/keys/rsa")).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, Error::Provider(ProviderError::InvalidUri { .. })),
                "{host}"
            );
            assert!(
                text.contains("RSA-OAEP wrap is made with the public key"),
                "{text}"
            );
            assert!(text.contains("Managed HSM AES-256 key"), "{text}");
        }
    }
}
