output "kek_uri" {
  description = "The KEK URI for `stateseal init --kek`."
  value       = "hcvault://${local.key_path}"
}

output "store_uri" {
  description = "The keyset store URI for `stateseal init --store` and the servers."
  value       = "vault-kv://${vault_mount.kv.path}/${var.keyset_path}"
}

output "policy_name" {
  description = "The least-privilege policy attached to the AppRole and Kubernetes roles."
  value       = vault_policy.server.name
}

output "approle_role_name" {
  description = "The AppRole role (read its role id and issue secret ids for the servers)."
  value       = var.approle_mount == null ? null : vault_approle_auth_backend_role.server[0].role_name
}

output "rotator_policy_name" {
  description = "The rotator's policy: data-key generation and keyset writes (`stateseal rotate --if-due`)."
  value       = vault_policy.rotator.name
}
