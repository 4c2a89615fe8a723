output "kek_uri" {
  description = "The KEK URI for `stateseal init --kek` (no version: wrapping uses the newest, each wrap names its own)."
  value       = "azure-kv://${local.hsm_host}/keys/${azurerm_key_vault_managed_hardware_security_module_key.kek.name}"
}

output "store_uri" {
  description = "The keyset store URI for `stateseal init --store` and the servers' `store`."
  value       = "az-blob://${azurerm_storage_account.keyset.name}/${azurerm_storage_container.keyset.name}/${var.keyset_blob}"
}

output "server_client_id" {
  description = "Client id of the servers' identity: the `azure.workload.identity/client-id` annotation of their service account (deploy/kubernetes/overlays/azure)."
  value       = azurerm_user_assigned_identity.server.client_id
}

output "rotator_client_id" {
  description = "Client id of the rotator's identity: the same annotation on the stateseal-keyset-rotator service account."
  value       = azurerm_user_assigned_identity.rotator.client_id
}

output "tenant_id" {
  description = "Tenant of both identities (AZURE_TENANT_ID; the workload identity webhook injects it)."
  value       = azurerm_user_assigned_identity.server.tenant_id
}
