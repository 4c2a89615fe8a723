//! The store's URI: which kind of deployment it names, a cluster's seed
//! nodes, stateseal's own query parameter taken out before the client sees
//! it, and the credentials kept out of every log and error.

/// What a URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `redis://` or `rediss://`: one server or primary.
    Single { tls: bool },
    /// `redis-cluster://` or `rediss-cluster://host:port,host:port/`: a cluster's seeds.
    Cluster { tls: bool },
}

impl Kind {
    pub(crate) fn of(uri: &str) -> Option<Self> {
        let scheme = uri.split_once("://")?.0;
        Some(match scheme {
            "redis" => Self::Single { tls: false },
            "rediss" => Self::Single { tls: true },
            "redis-cluster" => Self::Cluster { tls: false },
            "rediss-cluster" => Self::Cluster { tls: true },
            _ => return None,
        })
    }

    pub(crate) fn tls(self) -> bool {
        match self {
            Self::Single { tls } | Self::Cluster { tls } => tls,
        }
    }
}

/// A cluster URI's seed nodes as the client takes them (`redis://[user:password@]host:port`
/// each, `rediss://` for TLS): credentials apply to every node.
pub(crate) fn cluster_seeds(uri: &str) -> Result<Vec<String>, String> {
    let (scheme, rest) = uri.split_once("://").ok_or("not a URI")?;
    let scheme = scheme.trim_end_matches("-cluster");
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let path = path.split('?').next().unwrap_or("");
    if !matches!(path, "" | "/" | "/0") {
        return Err("a cluster has database 0 only: leave the path out".into());
    }
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let seeds: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|host| match userinfo {
            Some(u) => format!("{scheme}://{u}@{host}"),
            None => format!("{scheme}://{host}"),
        })
        .collect();
    if seeds.is_empty() {
        return Err(
            "a cluster URI names its seed nodes: redis-cluster://host:port,host:port/".into(),
        );
    }
    Ok(seeds)
}

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
    fn cluster_uris_give_seed_nodes_with_their_credentials() {
        assert_eq!(
            Kind::of("rediss-cluster://h:1"),
            Some(Kind::Cluster { tls: true })
        );
        assert_eq!(Kind::of("redis://h"), Some(Kind::Single { tls: false }));
        assert_eq!(Kind::of("memcached://h"), None);
        assert_eq!(
            cluster_seeds("redis-cluster://app:p%40ss@a.invalid:7000,b.invalid:7001/"),
            Ok(vec![
                "redis://app:p%40ss@a.invalid:7000".to_owned(),
                "redis://app:p%40ss@b.invalid:7001".to_owned()
            ])
        );
        assert_eq!(
            cluster_seeds("rediss-cluster://a.invalid:7000"),
            Ok(vec!["rediss://a.invalid:7000".to_owned()])
        );
        assert!(cluster_seeds("redis-cluster:///").is_err());
        assert!(
            cluster_seeds("redis-cluster://a:1/3")
                .unwrap_err()
                .contains("database 0")
        );
        let err = RedisReplayStore::builder("redis-cluster://:s3cret@a.invalid:1/2")
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("database 0") && !err.contains("s3cret"),
            "{err}"
        );
        let store = RedisReplayStore::builder(
            "redis-cluster://:s3cret@a.invalid:1,b.invalid:2/?wait_replicas=1",
        )
        .build()
        .expect("store");
        assert!(!format!("{store:?}").contains("s3cret"));
        assert_eq!(
            store.uri(),
            "redis-cluster://a.invalid:1,b.invalid:2/?wait_replicas=1"
        );
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
