//! An endpoint override for Cloud Storage requests.
//!
//! `object_store` addresses GCS at `https://storage.googleapis.com` (its only
//! override rides inside a service-account key file). This connector sends
//! the requests for that host to the configured endpoint instead, path and
//! query unchanged, and leaves every other request (OAuth token exchanges, the
//! metadata server) where it was going.

use http::Uri;
use http::uri::{Authority, Scheme};
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpService,
    ReqwestConnector,
};

/// The host `object_store` sends Cloud Storage requests to.
const GCS_HOST: &str = "storage.googleapis.com";

/// Connects as `object_store` does, through [`Redirect`].
#[derive(Debug)]
pub(super) struct EndpointConnector {
    scheme: Scheme,
    authority: Authority,
}

impl EndpointConnector {
    /// For `scheme://host[:port]`, already checked by the configuration.
    pub(super) fn new(endpoint: &str) -> Option<Self> {
        let uri: Uri = endpoint.parse().ok()?;
        Some(Self {
            scheme: uri.scheme()?.clone(),
            authority: uri.authority()?.clone(),
        })
    }
}

impl HttpConnector for EndpointConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(Redirect {
            inner: ReqwestConnector::default().connect(options)?,
            scheme: self.scheme.clone(),
            authority: self.authority.clone(),
        }))
    }
}

/// Rewrites the scheme and authority of Cloud Storage requests.
#[derive(Debug)]
struct Redirect {
    inner: HttpClient,
    scheme: Scheme,
    authority: Authority,
}

impl Redirect {
    fn rewrite(&self, uri: &Uri) -> Result<Option<Uri>, http::Error> {
        if uri.host() != Some(GCS_HOST) {
            return Ok(None);
        }
        let mut parts = uri.clone().into_parts();
        parts.scheme = Some(self.scheme.clone());
        parts.authority = Some(self.authority.clone());
        Ok(Some(Uri::from_parts(parts)?))
    }
}

#[async_trait::async_trait]
impl HttpService for Redirect {
    async fn call(&self, mut req: HttpRequest) -> Result<HttpResponse, HttpError> {
        match self.rewrite(req.uri()) {
            Ok(Some(uri)) => *req.uri_mut() = uri,
            Ok(None) => {}
            Err(e) => return Err(HttpError::new(HttpErrorKind::Request, e)),
        }
        self.inner.execute(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cloud_storage_requests_move() {
        let c = EndpointConnector::new("http://127.0.0.1:4443").expect("endpoint");
        let r = Redirect {
            inner: ReqwestConnector::default()
                .connect(&ClientOptions::new())
                .expect("client"),
            scheme: c.scheme,
            authority: c.authority,
        };
        let moved = r
            .rewrite(
                &"https://storage.googleapis.com/b%2Dx/o%2Ej?generation=7"
                    .parse()
                    .expect("uri"),
            )
            .expect("rewrite")
            .expect("moved");
        assert_eq!(
            moved.to_string(),
            "http://127.0.0.1:4443/b%2Dx/o%2Ej?generation=7"
        );
        for stays in [
            "https://oauth2.googleapis.com/token",
            "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token",
            "https://storage.googleapis.com.evil.example/b/o",
        ] {
            assert_eq!(
                r.rewrite(&stays.parse().expect("uri")).expect("rewrite"),
                None,
                "{stays}"
            );
        }
    }
}
