//! The store's URI: stateseal's own query parameter taken out before the
//! client sees it, and the credentials kept out of every log and error.

/// The most replicas a record may wait for (a typo of 1000 should not stall every round).
const MAX_WAIT_REPLICAS: u32 = 16;

/// `uri` without stateseal's own query parameter, and its `wait_replicas`.
pub(crate) fn own_settings(uri: &str) -> Result<(String, Option<u32>), String> {
    let Some((base, query)) = uri.split_once('?') else {
        return Ok((uri.to_owned(), None));
    };
    let (mut kept, mut wait) = (Vec::new(), None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("wait_replicas", n)) => match n.parse::<u32>() {
                Ok(n) if n <= MAX_WAIT_REPLICAS => wait = Some(n),
                _ => {
                    return Err(format!(
                        "wait_replicas must be a whole number from 0 to {MAX_WAIT_REPLICAS}, not {n:?}"
                    ));
                }
            },
            _ => kept.push(pair),
        }
    }
    let uri = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((uri, wait))
}

/// `uri` with any `user:password@` removed.
pub(crate) fn without_credentials(uri: &str) -> String {
    match uri.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => uri.to_owned(),
            }
        }
        None => "<not a URI>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RedisReplayStore;
    use stateseal::replay::ReplayStore;

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            without_credentials("redis://:s3cret@host:6379/0"),
            "redis://host:6379/0"
        );
        assert_eq!(
            without_credentials("rediss://user:p%40ss@host/1"),
            "rediss://host/1"
        );
        assert_eq!(without_credentials("redis://host"), "redis://host");
        assert_eq!(without_credentials("s3cret"), "<not a URI>");
        let b = RedisReplayStore::builder("redis://:s3cret@host:6379/0");
        assert!(!format!("{b:?}").contains("s3cret"));
        let s = b.build().expect("store");
        assert!(!format!("{s:?}").contains("s3cret"));
        assert_eq!(s.uri(), "redis://host:6379/0");
    }

    #[test]
    fn wait_replicas_comes_from_the_uri_and_the_rest_goes_to_the_client() {
        assert_eq!(
            own_settings("redis://h:1/0?wait_replicas=2"),
            Ok(("redis://h:1/0".to_owned(), Some(2)))
        );
        assert_eq!(
            own_settings("redis://h/0?protocol=resp3&wait_replicas=0"),
            Ok(("redis://h/0?protocol=resp3".to_owned(), Some(0)))
        );
        assert_eq!(
            own_settings("redis://h/0"),
            Ok(("redis://h/0".to_owned(), None))
        );
        let s = RedisReplayStore::builder("redis://:s3cret@h/0?wait_replicas=1")
            .build()
            .expect("store");
        assert!(format!("{s:?}").contains("wait_replicas: 1"), "{s:?}");
        for bad in ["x", "-1", "17", ""] {
            let err =
                RedisReplayStore::builder(&format!("redis://:s3cret@h/0?wait_replicas={bad}"))
                    .build()
                    .unwrap_err()
                    .to_string();
            assert!(
                err.contains("wait_replicas must be a whole number"),
                "{err}"
            );
            assert!(!err.contains("s3cret"), "{err}");
        }
    }
}
