//! `s3://<bucket>/<key>`: the keyset document as one S3 object.
//!
//! Every write is conditional: the first with `If-None-Match: *`, later ones
//! with `If-Match: <ETag of the version this store just read at the expected
//! generation>`. S3 refuses the loser of a race with 412, so several
//! instances and operators can rotate at once and exactly one write lands.
//! Credentials, region and endpoint come from the same chain as the KMS
//! client (`AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`, then the config).

use std::sync::Arc;

use aws_credential_types::provider::ProvideCredentials;
use object_store::aws::{AmazonS3, AmazonS3Builder, AwsCredential};
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion};
use stateseal::keyset::check_next_generation;
use stateseal::provider::{BoxFuture, check_endpoint, is_loopback_http};
use stateseal::{Error, Keyset, KeysetStore};
use tokio::sync::OnceCell;

use crate::config::AwsConfig;

/// The S3 keyset store. Open it through the registry ([`crate::register`]).
#[derive(Debug)]
pub struct S3Store {
    config: AwsConfig,
    uri: String,
    bucket: String,
    key: Path,
    client: OnceCell<AmazonS3>,
}

/// The AWS SDK's credential chain, lent to object_store so S3 and KMS sign with the same identity.
#[derive(Debug)]
struct SdkCredentials(aws_credential_types::provider::SharedCredentialsProvider);

#[async_trait::async_trait]
impl object_store::CredentialProvider for SdkCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let c = self
            .0
            .provide_credentials()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        Ok(Arc::new(AwsCredential {
            key_id: c.access_key_id().to_owned(),
            secret_key: c.secret_access_key().to_owned(),
            token: c.session_token().map(str::to_owned),
        }))
    }
}

fn parse(uri: &str) -> Result<(String, String), Error> {
    let bad = || Error::InvalidUri {
        uri: uri.to_owned(),
        problem: "expected s3://<bucket>/<object key>".into(),
    };
    let rest = uri.strip_prefix("s3://").ok_or_else(bad)?;
    let (bucket, key) = rest.split_once('/').ok_or_else(bad)?;
    let bucket_ok = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let key_ok = !key.is_empty()
        && key
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if !bucket_ok || !key_ok {
        return Err(bad());
    }
    Ok((bucket.to_owned(), key.to_owned()))
}

impl S3Store {
    /// A store for `s3://<bucket>/<key>` (the client is built on first use).
    ///
    /// # Errors
    /// [`Error::InvalidUri`].
    pub fn open(config: AwsConfig, uri: &str) -> Result<Self, Error> {
        let (bucket, key) = parse(uri)?;
        Ok(Self {
            config,
            uri: uri.to_owned(),
            bucket,
            key: Path::from(key),
            client: OnceCell::new(),
        })
    }

    fn error(&self, problem: impl Into<String>) -> Error {
        Error::Store {
            uri: self.uri.clone(),
            problem: problem.into(),
        }
    }

    async fn client(&self) -> Result<&AmazonS3, Error> {
        self.client
            .get_or_try_init(|| async {
                let sdk = self.config.load().await;
                let region = sdk.region().map(ToString::to_string).ok_or_else(|| {
                    self.error("no AWS region is configured (set AWS_REGION or a profile region)")
                })?;
                let creds = sdk
                    .credentials_provider()
                    .ok_or_else(|| self.error("no AWS credentials provider is configured"))?;
                let endpoint = self
                    .config
                    .endpoint_url()
                    .map(str::to_owned)
                    .or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok())
                    .or_else(|| sdk.endpoint_url().map(str::to_owned));
                let mut b = AmazonS3Builder::new()
                    .with_bucket_name(&self.bucket)
                    .with_region(region)
                    .with_credentials(Arc::new(SdkCredentials(creds)));
                if let Some(url) = endpoint {
                    // Plain HTTP only to a loopback endpoint (a local test server).
                    check_endpoint("s3", &url)?;
                    let loopback = is_loopback_http(&url);
                    b = b.with_endpoint(url).with_allow_http(loopback);
                }
                b.build().map_err(|e| self.error(format!("S3 client: {e}")))
            })
            .await
    }

    /// The document and its ETag (`None`: no object).
    async fn read(&self) -> Result<Option<(Keyset, String)>, Error> {
        let client = self.client().await?;
        let got = match client.get(&self.key).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.error(format!("read: {}", short(&e)))),
        };
        let etag = got
            .meta
            .e_tag
            .clone()
            .ok_or_else(|| self.error("S3 returned no ETag; conditional writes need one"))?;
        let bytes = got
            .bytes()
            .await
            .map_err(|e| self.error(format!("read: {}", short(&e))))?;
        Ok(Some((Keyset::from_json(&bytes)?, etag)))
    }

    async fn cas(&self, expected: Option<u64>, doc: &Keyset) -> Result<(), Error> {
        check_next_generation(&self.uri, expected, doc)?;
        doc.validate()?;
        let current = self.read().await?;
        let found = current.as_ref().map(|(d, _)| d.generation);
        if found != expected {
            return Err(Error::Conflict { expected, found });
        }
        let mode = match current {
            None => PutMode::Create,
            Some((_, etag)) => PutMode::Update(UpdateVersion {
                e_tag: Some(etag),
                version: None,
            }),
        };
        let opts = PutOptions {
            mode,
            ..PutOptions::default()
        };
        let client = self.client().await?;
        match client
            .put_opts(&self.key, PutPayload::from(doc.to_json()), opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(
                object_store::Error::Precondition { .. }
                | object_store::Error::AlreadyExists { .. },
            ) => {
                // Another writer landed between our read and our write.
                let found = self.read().await.ok().flatten().map(|(d, _)| d.generation);
                Err(Error::Conflict { expected, found })
            }
            Err(e) => Err(self.error(format!("write: {}", short(&e)))),
        }
    }
}

/// An object_store error, one line, bounded (it names bucket and key, never credentials).
fn short(e: &object_store::Error) -> String {
    e.to_string()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

impl KeysetStore for S3Store {
    fn uri(&self) -> &str {
        &self.uri
    }

    fn load(&self) -> BoxFuture<'_, Result<Option<Keyset>, Error>> {
        Box::pin(async move { Ok(self.read().await?.map(|(d, _)| d)) })
    }

    fn compare_and_swap<'a>(
        &'a self,
        expected: Option<u64>,
        doc: &'a Keyset,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(self.cas(expected, doc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_uris() {
        assert_eq!(
            parse("s3://stateseal-keys/prod/keyset.json").unwrap(),
            ("stateseal-keys".to_owned(), "prod/keyset.json".to_owned())
        );
        for bad in [
            "s3://stateseal-keys",
            "s3://stateseal-keys/",
            "s3://ab/k",
            "s3://Upper/k",
            "s3://stateseal-keys/a//b",
            "s3://stateseal-keys/../k",
            "gs://stateseal-keys/k",
        ] {
            assert!(matches!(parse(bad), Err(Error::InvalidUri { .. })), "{bad}");
        }
    }
}
