variable "name" {
  description = "Prefix for the identities, the custom roles and the diagnostic setting."
  type        = string
  default     = "stateseal"
}

variable "resource_group_name" {
  description = "Existing resource group that holds the storage account, the identities and the custom storage roles."
  type        = string
}

variable "location" {
  description = "Azure region of the storage account and the identities."
  type        = string
  default     = "westeurope"
}

variable "managed_hsm_id" {
  description = "Resource ID of an existing, activated Managed HSM (activation needs its security domain downloaded and kept offline, so this module does not create one). Keep purge protection on: a purged key never decrypts again."
  type        = string
}

variable "managed_hsm_uri" {
  description = "Data-plane URI of that Managed HSM (https://<name>.managedhsm.azure.net/)."
  type        = string
  validation {
    condition     = can(regex("^https://[a-z0-9-]+\\.managedhsm\\.[a-z0-9.]+/?$", var.managed_hsm_uri))
    error_message = "managed_hsm_uri must look like https://<name>.managedhsm.azure.net/."
  }
}

variable "key_name" {
  description = "Name of the HSM key (the KEK)."
  type        = string
  default     = "stateseal-kek"
}

variable "key_rotation_period" {
  description = "ISO 8601 duration after which the HSM creates a new key version (old versions keep decrypting)."
  type        = string
  default     = "P90D"
}

variable "key_version_expiry" {
  description = "ISO 8601 lifetime of each new key version (at least P28D, longer than key_rotation_period). An expired version still decrypts; it only stops wrapping new keys."
  type        = string
  default     = "P1Y"
}

variable "storage_account_name" {
  description = "Name of the storage account that holds the keyset document (3-24 lowercase letters and digits, globally unique)."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9]{3,24}$", var.storage_account_name))
    error_message = "storage_account_name must be 3-24 lowercase letters and digits."
  }
}

variable "container_name" {
  description = "Name of the private container inside the account."
  type        = string
  default     = "stateseal"
}

variable "keyset_blob" {
  description = "Blob name of the keyset document inside the container."
  type        = string
  default     = "stateseal/keyset.json"
}

variable "replication_type" {
  description = "Replication of the storage account: LRS, ZRS, GRS, RAGRS, GZRS or RAGZRS."
  type        = string
  default     = "ZRS"
  validation {
    condition     = contains(["LRS", "ZRS", "GRS", "RAGRS", "GZRS", "RAGZRS"], var.replication_type)
    error_message = "replication_type must be LRS, ZRS, GRS, RAGRS, GZRS or RAGZRS."
  }
}

variable "soft_delete_days" {
  description = "How long a deleted blob, blob version or container stays recoverable (7 to 365 days)."
  type        = number
  default     = 30
  validation {
    condition     = var.soft_delete_days >= 7 && var.soft_delete_days <= 365
    error_message = "soft_delete_days must be between 7 and 365."
  }
}

variable "allowed_subnet_ids" {
  description = "Subnets that may reach the storage account (the AKS node subnet, with the Microsoft.Storage service endpoint); the account's firewall refuses every other network."
  type        = list(string)
  default     = []
}

variable "allowed_ip_ranges" {
  description = "Public IPv4 ranges (CIDR) that may reach the storage account, e.g. where operators run `stateseal init`."
  type        = list(string)
  default     = []
}

variable "log_analytics_workspace_id" {
  description = "Existing Log Analytics workspace that receives the account's blob read, write and delete logs."
  type        = string
}

variable "oidc_issuer_url" {
  description = "OIDC issuer URL of the AKS cluster (oidc_issuer_url of azurerm_kubernetes_cluster, with oidc_issuer_enabled and workload_identity_enabled)."
  type        = string
}

variable "kubernetes_namespace" {
  description = "Namespace of the servers and the rotator job (deploy/kubernetes)."
  type        = string
  default     = "default"
}

variable "server_service_account" {
  description = "Kubernetes service account of the MCP servers (deploy/kubernetes/base)."
  type        = string
  default     = "stateseal-example"
}

variable "rotator_service_account" {
  description = "Kubernetes service account of the keyset rotator job (deploy/kubernetes/base)."
  type        = string
  default     = "stateseal-keyset-rotator"
}

variable "operator_principal_ids" {
  description = "Entra ID object ids (users or groups) that may create and replace the keyset blob. Without an HSM role they cannot change which keys the fleet uses: the document is authenticated under a key only KEK holders can unwrap. Running `stateseal init` or `rotate` also needs encrypt/decrypt on the key, granted separately."
  type        = list(string)
  default     = []
}

variable "servers_write_keyset" {
  description = "Whether the servers may write the keyset (renewals, rotation by age) and wrap new keys. Default false: servers decrypt and read, and the rotator job (`stateseal rotate --if-due`, rotator_client_id) writes."
  type        = bool
  default     = false
}
