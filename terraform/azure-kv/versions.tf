terraform {
  required_version = ">= 1.5"
  required_providers {
    azurerm = {
      source = "hashicorp/azurerm"
      # 4.3 added Managed HSM key rotation policies; 4.9 creates containers
      # through Resource Manager (storage_account_id), so no account key is needed.
      version = "~> 4.9"
    }
  }
}
