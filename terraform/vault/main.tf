# Transit KEK, KV v2 store and a least-privilege policy for stateseal servers.
# The key is derived (stateseal binds each wrap to its keyset and entry through
# the derivation context), never exportable, and protected from deletion.

resource "vault_mount" "transit" {
  path        = var.transit_mount
  type        = "transit"
  description = "stateseal key-encryption keys"
}

resource "vault_transit_secret_backend_key" "kek" {
  backend                = vault_mount.transit.path
  name                   = var.key_name
  type                   = "aes256-gcm96"
  derived                = true
  exportable             = false
  allow_plaintext_backup = false
  deletion_allowed       = false
  auto_rotate_period     = var.key_auto_rotate_period

  lifecycle {
    prevent_destroy = true
  }
}

resource "vault_mount" "kv" {
  path        = var.kv_mount
  type        = "kv"
  options     = { version = "2" }
  description = "stateseal keyset documents (wrapped keys only)"
}

resource "vault_kv_secret_backend_v2" "kv" {
  mount        = vault_mount.kv.path
  cas_required = true
  max_versions = 20
}

locals {
  key_path = "${vault_mount.transit.path}/keys/${vault_transit_secret_backend_key.kek.name}"
}

# Servers read: unwrap data keys and read the keyset. With v2 keys (what
# `stateseal init` and every rotation write) nothing else is needed to seal.
data "vault_policy_document" "server" {
  rule {
    path         = "${vault_mount.transit.path}/decrypt/${vault_transit_secret_backend_key.kek.name}"
    capabilities = ["update"]
    description  = "unwrap data keys"
  }
  rule {
    path         = "${vault_mount.kv.path}/data/${var.keyset_path}"
    capabilities = ["read"]
    description  = "read the keyset document"
  }
  rule {
    path         = "${vault_mount.kv.path}/metadata/${var.keyset_path}"
    capabilities = ["read"]
    description  = "conditional refresh: the keyset's current version, without its data"
  }
  rule {
    path         = "${vault_mount.kv.path}/data/${var.keyset_path}.newest"
    capabilities = ["read"]
    description  = "the newest copy: a restarted server's floor (a restored older document is not adopted)"
  }
}

# The rotator (`stateseal rotate --if-due` on a schedule, deploy/kubernetes
# CronJob) also generates keys and writes the document and its newest copy.
data "vault_policy_document" "rotator" {
  rule {
    path         = "${vault_mount.transit.path}/datakey/plaintext/${vault_transit_secret_backend_key.kek.name}"
    capabilities = ["update"]
    description  = "generate data keys (rotation)"
  }
  rule {
    path         = "${vault_mount.transit.path}/decrypt/${vault_transit_secret_backend_key.kek.name}"
    capabilities = ["update"]
    description  = "unwrap data keys"
  }
  rule {
    path         = "${vault_mount.kv.path}/data/${var.keyset_path}"
    capabilities = ["create", "read", "update"]
    description  = "read and compare-and-swap the keyset document"
  }
  rule {
    path         = "${vault_mount.kv.path}/data/${var.keyset_path}.newest"
    capabilities = ["create", "read", "update"]
    description  = "the copy of the newest keyset document, kept beside it"
  }
}

resource "vault_policy" "rotator" {
  name   = "${var.policy_name}-rotator"
  policy = data.vault_policy_document.rotator.hcl
}

locals {
  # Servers that write the keyset themselves (renewals, rotation by age) hold the rotator's policy too.
  server_policies = var.servers_write_keyset ? [vault_policy.server.name, vault_policy.rotator.name] : [vault_policy.server.name]
}

resource "vault_policy" "server" {
  name   = var.policy_name
  policy = data.vault_policy_document.server.hcl
}

resource "vault_approle_auth_backend_role" "server" {
  count          = var.approle_mount == null ? 0 : 1
  backend        = var.approle_mount
  role_name      = var.policy_name
  token_policies = local.server_policies
  token_ttl      = var.token_ttl
  token_max_ttl  = var.token_max_ttl
  # Secret ids are delivered to servers out of band and expire.
  secret_id_ttl = 86400
}

resource "vault_kubernetes_auth_backend_role" "server" {
  count                            = var.kubernetes_mount == null ? 0 : 1
  backend                          = var.kubernetes_mount
  role_name                        = var.policy_name
  bound_service_account_names      = var.kubernetes_service_accounts
  bound_service_account_namespaces = var.kubernetes_namespaces
  token_policies                   = local.server_policies
  token_ttl                        = var.token_ttl
  token_max_ttl                    = var.token_max_ttl
}

resource "vault_kubernetes_auth_backend_role" "rotator" {
  count                            = var.kubernetes_mount == null ? 0 : 1
  backend                          = var.kubernetes_mount
  role_name                        = "${var.policy_name}-rotator"
  bound_service_account_names      = var.rotator_service_accounts
  bound_service_account_namespaces = var.kubernetes_namespaces
  token_policies                   = [vault_policy.rotator.name]
  token_ttl                        = var.token_ttl
  token_max_ttl                    = var.token_max_ttl
}
