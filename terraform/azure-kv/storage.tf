# The keyset account: it holds only HSM-wrapped keys, but its integrity matters
# (a deleted or rolled-back document stops rotations), so it is private,
# Entra ID-only, reachable from named networks only, versioned, soft-delete
# protected, logged and protected from `terraform destroy`.

resource "azurerm_storage_account" "keyset" {
  # checkov:skip=CKV_AZURE_206:One small document per fleet; a region outage pauses rotation, cached keys keep serving, and the document can be restored from a version. replication_type raises it.
  # checkov:skip=CKV2_AZURE_1:Microsoft-managed keys plus infrastructure encryption on purpose: a customer-managed key would need an RSA key and unwrap rights for the storage service in the HSM; the document holds only HSM-wrapped keys.
  # checkov:skip=CKV_AZURE_59:The servers reach the account through their subnet's service endpoint (network_rules deny every other network), which needs public network access on.
  # checkov:skip=CKV2_AZURE_33:A private endpoint needs the cluster's virtual network and DNS zone, which this module does not own; the firewall admits allowed_subnet_ids and allowed_ip_ranges only.
  # checkov:skip=CKV_AZURE_33:No queues are used; the blob service's reads, writes and deletes go to Log Analytics (diagnostic setting below).
  name                     = var.storage_account_name
  resource_group_name      = var.resource_group_name
  location                 = var.location
  account_kind             = "StorageV2"
  account_tier             = "Standard"
  account_replication_type = var.replication_type

  https_traffic_only_enabled      = true
  min_tls_version                 = "TLS1_2"
  allow_nested_items_to_be_public = false
  # Entra ID only: no account key or account SAS that would step around the per-blob grants below.
  shared_access_key_enabled         = false
  default_to_oauth_authentication   = true
  local_user_enabled                = false
  cross_tenant_replication_enabled  = false
  infrastructure_encryption_enabled = true

  # User delegation SAS (the only kind left) expire within the hour.
  sas_policy {
    expiration_period = "00.01:00:00"
  }

  blob_properties {
    # Every overwritten document stays as a version: what the fleet used can
    # be audited and restored (instances refuse a rolled-back generation).
    versioning_enabled = true
    # A deleted blob, version or container stays recoverable for this long.
    delete_retention_policy {
      days = var.soft_delete_days
    }
    container_delete_retention_policy {
      days = var.soft_delete_days
    }
  }

  network_rules {
    default_action = "Deny"
    # Trusted Azure services still need a role on the container; none has one.
    bypass                     = ["AzureServices"]
    ip_rules                   = var.allowed_ip_ranges
    virtual_network_subnet_ids = var.allowed_subnet_ids
  }

  lifecycle {
    prevent_destroy = true
  }
}

resource "azurerm_storage_container" "keyset" {
  # checkov:skip=CKV2_AZURE_21:Blob reads are logged through the diagnostic setting below; Log Analytics storage insights would need the account key, which is disabled.
  name                  = var.container_name
  storage_account_id    = azurerm_storage_account.keyset.id
  container_access_type = "private"

  lifecycle {
    prevent_destroy = true
  }
}

resource "azurerm_storage_management_policy" "keyset" {
  storage_account_id = azurerm_storage_account.keyset.id
  rule {
    name    = "expire-old-keyset-versions"
    enabled = true
    filters {
      blob_types   = ["blockBlob"]
      prefix_match = ["${var.container_name}/"]
    }
    actions {
      version {
        delete_after_days_since_creation = 90
      }
    }
  }
}

resource "azurerm_monitor_diagnostic_setting" "keyset" {
  name                       = "${var.name}-keyset-access"
  target_resource_id         = "${azurerm_storage_account.keyset.id}/blobServices/default"
  log_analytics_workspace_id = var.log_analytics_workspace_id
  enabled_log {
    category = "StorageRead"
  }
  enabled_log {
    category = "StorageWrite"
  }
  enabled_log {
    category = "StorageDelete"
  }
}

data "azurerm_resource_group" "stateseal" {
  name = var.resource_group_name
}

locals {
  blob_read  = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"
  blob_write = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"
  blob_add   = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action"
  blob_path  = "@Resource[Microsoft.Storage/storageAccounts/blobServices/containers/blobs:path]"
  # The document and the copy of the newest document every writer keeps beside it.
  keyset_blobs = "${local.blob_path} StringEquals '${var.keyset_blob}' OR ${local.blob_path} StringEquals '${var.keyset_blob}.newest'"
  # Role assignment conditions (ABAC): each granted action only on those two
  # blobs. Listing has no blob path, so it is refused too.
  reader_condition = "(!(ActionMatches{'${local.blob_read}'})) OR (${local.keyset_blobs})"
  writer_condition = "(!(ActionMatches{'${local.blob_read}'}) AND !(ActionMatches{'${local.blob_write}'}) AND !(ActionMatches{'${local.blob_add}'})) OR (${local.keyset_blobs})"
}

# Exactly what stateseal does to the document: read it, and create or replace
# it conditionally (ETag). No delete: versions and soft delete stay intact.
resource "azurerm_role_definition" "keyset_reader" {
  name              = "${var.name} keyset reader (${var.storage_account_name})"
  scope             = data.azurerm_resource_group.stateseal.id
  description       = "Reads the stateseal keyset document."
  assignable_scopes = [data.azurerm_resource_group.stateseal.id]
  permissions {
    data_actions = ["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"]
  }
}

resource "azurerm_role_definition" "keyset_writer" {
  name              = "${var.name} keyset writer (${var.storage_account_name})"
  scope             = data.azurerm_resource_group.stateseal.id
  description       = "Reads, creates and replaces the stateseal keyset document."
  assignable_scopes = [data.azurerm_resource_group.stateseal.id]
  permissions {
    data_actions = [
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write",
    ]
  }
}

# The servers: the document and its newest copy only, on the container. Read
# by default: with v2 keys sealing needs no write, and the rotator renews and rotates.
resource "azurerm_role_assignment" "servers" {
  scope              = azurerm_storage_container.keyset.id
  role_definition_id = var.servers_write_keyset ? azurerm_role_definition.keyset_writer.role_definition_resource_id : azurerm_role_definition.keyset_reader.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.server.principal_id
  principal_type     = "ServicePrincipal"
  condition_version  = "2.0"
  condition          = var.servers_write_keyset ? local.writer_condition : local.reader_condition
}

# The rotator (`stateseal rotate --if-due` on a schedule, deploy/kubernetes
# CronJob): create and replace the same two blobs.
resource "azurerm_role_assignment" "rotator" {
  scope              = azurerm_storage_container.keyset.id
  role_definition_id = azurerm_role_definition.keyset_writer.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.rotator.principal_id
  principal_type     = "ServicePrincipal"
  condition_version  = "2.0"
  condition          = local.writer_condition
}

# The operators (`stateseal init`, `rotate`): create and replace the same two blobs.
resource "azurerm_role_assignment" "operators" {
  for_each           = toset(var.operator_principal_ids)
  scope              = azurerm_storage_container.keyset.id
  role_definition_id = azurerm_role_definition.keyset_writer.role_definition_resource_id
  principal_id       = each.value
  condition_version  = "2.0"
  condition          = local.writer_condition
}
