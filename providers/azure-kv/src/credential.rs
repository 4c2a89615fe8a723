//! The credential behind each request, in the order Azure's own default
//! credential tries them: environment, workload identity, managed identity,
//! Azure CLI.

use std::sync::Arc;

use azure_core::credentials::{AccessToken, Secret, TokenCredential, TokenRequestOptions};
use azure_core::error::{Error as AzureError, ErrorKind};
use azure_core::time::{Duration, OffsetDateTime};
use azure_identity::{
    AzureCliCredential, ClientSecretCredential, ManagedIdentityCredential,
    ManagedIdentityCredentialOptions, UserAssignedId, WorkloadIdentityCredential,
};

use crate::config::AzureCredentialKind;

/// The credential of `kind`, reading Azure's standard variables through `var`.
pub(crate) fn credential(
    kind: AzureCredentialKind,
    var: &impl Fn(&str) -> Option<String>,
) -> azure_core::Result<Arc<dyn TokenCredential>> {
    let environment = || -> azure_core::Result<Arc<dyn TokenCredential>> {
        let (Some(tenant), Some(client), Some(secret)) = (
            var("AZURE_TENANT_ID"),
            var("AZURE_CLIENT_ID"),
            var("AZURE_CLIENT_SECRET"),
        ) else {
            return Err(AzureError::with_message(
                ErrorKind::Credential,
                "environment credential: AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET must all be set",
            ));
        };
        Ok(ClientSecretCredential::new(
            &tenant,
            client,
            Secret::new(secret),
            None,
        )?)
    };
    let managed = || -> azure_core::Result<Arc<dyn TokenCredential>> {
        let options = ManagedIdentityCredentialOptions {
            user_assigned_id: var("AZURE_CLIENT_ID").map(UserAssignedId::ClientId),
            ..Default::default()
        };
        Ok(ManagedIdentityCredential::new(Some(options))?)
    };
    let workload = || -> azure_core::Result<Arc<dyn TokenCredential>> {
        Ok(WorkloadIdentityCredential::new(None)?)
    };
    let cli =
        || -> azure_core::Result<Arc<dyn TokenCredential>> { Ok(AzureCliCredential::new(None)?) };
    match kind {
        AzureCredentialKind::Environment => environment(),
        AzureCredentialKind::WorkloadIdentity => workload(),
        AzureCredentialKind::ManagedIdentity => managed(),
        AzureCredentialKind::AzureCli => cli(),
        AzureCredentialKind::Anonymous => Ok(Arc::new(Placeholder)),
        // The first configured source; managed identity and the CLI cannot be
        // told from the environment, so they are tried in turn.
        AzureCredentialKind::Default if var("AZURE_CLIENT_SECRET").is_some() => environment(),
        AzureCredentialKind::Default if var("AZURE_FEDERATED_TOKEN_FILE").is_some() => workload(),
        AzureCredentialKind::Default => Ok(Arc::new(FirstOf(vec![managed()?, cli()?]))),
    }
}

/// Tries each source in order; the errors of all when none gives a token.
#[derive(Debug)]
struct FirstOf(Vec<Arc<dyn TokenCredential>>);

#[async_trait::async_trait]
impl TokenCredential for FirstOf {
    async fn get_token(
        &self,
        scopes: &[&str],
        options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        let mut failures = Vec::new();
        for source in &self.0 {
            match source.get_token(scopes, options.clone()).await {
                Ok(token) => return Ok(token),
                Err(e) => failures.push(e.to_string()),
            }
        }
        Err(AzureError::with_message(
            ErrorKind::Credential,
            format!(
                "no Azure credential gave a token (managed identity, then the Azure CLI): {}",
                failures.join("; ")
            ),
        ))
    }
}

/// The token sent to a loopback test double: a fixed, public placeholder.
#[derive(Debug)]
struct Placeholder;

/// What [`AzureCredentialKind::Anonymous`] sends as its bearer token.
pub(crate) const PLACEHOLDER_TOKEN: &str = "stateseal-anonymous";

#[async_trait::async_trait]
impl TokenCredential for Placeholder {
    async fn get_token(
        &self,
        _scopes: &[&str],
        _options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        Ok(AccessToken::new(
            Secret::new(PLACEHOLDER_TOKEN),
            OffsetDateTime::now_utc() + Duration::hours(1),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_credential_names_what_is_missing() {
        let none = |_: &str| None;
        let e = credential(AzureCredentialKind::Environment, &none).unwrap_err();
        assert!(
            e.to_string()
                .contains("AZURE_CLIENT_SECRET must all be set"),
            "{e}"
        );
        let set = |k: &str| match k {
            "AZURE_TENANT_ID" => Some("00000000-0000-0000-0000-000000000000".to_owned()),
            "AZURE_CLIENT_ID" => Some("11111111-1111-1111-1111-111111111111".to_owned()),
            "AZURE_CLIENT_SECRET" => Some("not-a-real-secret".to_owned()),
            _ => None,
        };
        let c = credential(AzureCredentialKind::Default, &set).unwrap();
        assert!(
            !format!("{c:?}").contains("not-a-real-secret"),
            "the secret is redacted"
        );
    }

    #[tokio::test]
    async fn the_placeholder_is_a_fixed_token() {
        let t = Placeholder
            .get_token(&["https://managedhsm.azure.net/.default"], None)
            .await
            .unwrap();
        assert_eq!(t.token.secret(), PLACEHOLDER_TOKEN);
    }
}
