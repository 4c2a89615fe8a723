# An AES-256 key in an existing Managed HSM (the KEK) that rotates, only
# encrypts and decrypts, and cannot be destroyed by terraform; the identities
# the AKS service accounts federate to; HSM roles on this one key.

locals {
  # https://<name>.managedhsm.azure.net/ -> <name>.managedhsm.azure.net, the host of azure-kv:// URIs.
  hsm_host = trimsuffix(trimprefix(var.managed_hsm_uri, "https://"), "/")
  # Managed HSM role scopes: "/" is every key and role, "/keys" every key; this is the KEK alone.
  key_scope = "/keys/${azurerm_key_vault_managed_hardware_security_module_key.kek.name}"
}

resource "azurerm_key_vault_managed_hardware_security_module_key" "kek" {
  name           = var.key_name
  managed_hsm_id = var.managed_hsm_id
  key_type       = "oct-HSM"
  key_size       = 256
  # stateseal wraps data keys with Encrypt/Decrypt A256GCM and associated data; nothing else.
  key_opts = ["decrypt", "encrypt"]

  lifecycle {
    prevent_destroy = true
  }
}

# A new version every key_rotation_period; wraps name their version, so older ones keep decrypting.
resource "azurerm_key_vault_managed_hardware_security_module_key_rotation_policy" "kek" {
  managed_hsm_key_id  = azurerm_key_vault_managed_hardware_security_module_key.kek.id
  time_after_creation = var.key_rotation_period
  expire_after        = var.key_version_expiry
}

# One identity per workload, so the servers never hold what the rotator holds.
resource "azurerm_user_assigned_identity" "server" {
  name                = "${var.name}-server"
  resource_group_name = var.resource_group_name
  location            = var.location
}

resource "azurerm_user_assigned_identity" "rotator" {
  name                = "${var.name}-rotator"
  resource_group_name = var.resource_group_name
  location            = var.location
}

# AKS workload identity: a token for this service account, from this cluster's
# issuer, is the only credential; there is no secret to leak or rotate.
resource "azurerm_federated_identity_credential" "server" {
  name                = "${var.name}-server-aks"
  resource_group_name = var.resource_group_name
  parent_id           = azurerm_user_assigned_identity.server.id
  issuer              = var.oidc_issuer_url
  subject             = "system:serviceaccount:${var.kubernetes_namespace}:${var.server_service_account}"
  audience            = ["api://AzureADTokenExchange"]
}

resource "azurerm_federated_identity_credential" "rotator" {
  name                = "${var.name}-rotator-aks"
  resource_group_name = var.resource_group_name
  parent_id           = azurerm_user_assigned_identity.rotator.id
  issuer              = var.oidc_issuer_url
  subject             = "system:serviceaccount:${var.kubernetes_namespace}:${var.rotator_service_account}"
  audience            = ["api://AzureADTokenExchange"]
}

# Custom HSM roles: the built-in Crypto User also creates, deletes, backs up
# and signs. Read-only servers only decrypt (unwrap: a wrap names its key
# version). Servers that write the keyset, and the rotator, also encrypt (wrap
# new keys) and read the key's attributes: stateseal checks that the key is
# AES before its first wrap (an oct-HSM key's material is never returned).
resource "azurerm_key_vault_managed_hardware_security_module_role_definition" "unwrap" {
  name           = uuidv5("url", "https://${local.hsm_host}/stateseal/${var.name}/unwrap")
  managed_hsm_id = var.managed_hsm_id
  role_name      = "${var.name} key unwrapper"
  description    = "Decrypts (unwraps) stateseal data keys."
  permission {
    data_actions = ["Microsoft.KeyVault/managedHsm/keys/decrypt/action"]
  }
}

resource "azurerm_key_vault_managed_hardware_security_module_role_definition" "wrap" {
  name           = uuidv5("url", "https://${local.hsm_host}/stateseal/${var.name}/wrap")
  managed_hsm_id = var.managed_hsm_id
  role_name      = "${var.name} key wrapper"
  description    = "Encrypts (wraps) and decrypts stateseal data keys, and reads the key's type."
  permission {
    data_actions = [
      "Microsoft.KeyVault/managedHsm/keys/decrypt/action",
      "Microsoft.KeyVault/managedHsm/keys/encrypt/action",
      "Microsoft.KeyVault/managedHsm/keys/read/action",
    ]
  }
}

# On this key only (assignment names are GUIDs: derived, so a re-apply finds them).
resource "azurerm_key_vault_managed_hardware_security_module_role_assignment" "servers" {
  name               = uuidv5("url", "https://${local.hsm_host}${local.key_scope}#servers")
  managed_hsm_id     = var.managed_hsm_id
  scope              = local.key_scope
  role_definition_id = azurerm_key_vault_managed_hardware_security_module_role_definition.unwrap.resource_manager_id
  principal_id       = azurerm_user_assigned_identity.server.principal_id
}

resource "azurerm_key_vault_managed_hardware_security_module_role_assignment" "servers_wrap" {
  count              = var.servers_write_keyset ? 1 : 0
  name               = uuidv5("url", "https://${local.hsm_host}${local.key_scope}#servers-wrap")
  managed_hsm_id     = var.managed_hsm_id
  scope              = local.key_scope
  role_definition_id = azurerm_key_vault_managed_hardware_security_module_role_definition.wrap.resource_manager_id
  principal_id       = azurerm_user_assigned_identity.server.principal_id
}

# The rotator (`stateseal rotate --if-due` on a schedule, deploy/kubernetes CronJob).
resource "azurerm_key_vault_managed_hardware_security_module_role_assignment" "rotator" {
  name               = uuidv5("url", "https://${local.hsm_host}${local.key_scope}#rotator")
  managed_hsm_id     = var.managed_hsm_id
  scope              = local.key_scope
  role_definition_id = azurerm_key_vault_managed_hardware_security_module_role_definition.wrap.resource_manager_id
  principal_id       = azurerm_user_assigned_identity.rotator.principal_id
}
