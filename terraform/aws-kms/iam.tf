# What an MCP server needs, and nothing else: decrypt data keys under this
# key with stateseal's encryption context, and read the keyset object and its
# newest copy. With v2
# keys (what `stateseal init` and every rotation write) that is all sealing
# needs; the rotator job writes. Servers that should write the keyset
# themselves (renewals, rotation by age) get rotator_policy_arn as well.

data "aws_iam_policy_document" "server" {
  statement {
    sid       = "DataKeysWithStatesealContext"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.kek.arn]
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = local.context_keys
    }
    condition {
      test     = "Null"
      variable = "kms:EncryptionContext:stateseal:keyset"
      values   = ["false"]
    }
  }
  # The newest copy too: a restarted server takes it as its floor, so a
  # restored older document is not adopted (without it the floor is off).
  statement {
    sid       = "KeysetDocument"
    actions   = ["s3:GetObject"]
    resources = [local.keyset_arn, local.newest_arn]
  }
}

# The rotator (`stateseal rotate --if-due` on a schedule, deploy/kubernetes
# CronJob): generates and decrypts data keys, reads and conditionally writes
# the keyset object and the copy of the newest document beside it.
data "aws_iam_policy_document" "rotator" {
  statement {
    sid       = "DataKeysWithStatesealContext"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [aws_kms_key.kek.arn]
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = local.context_keys
    }
    condition {
      test     = "Null"
      variable = "kms:EncryptionContext:stateseal:keyset"
      values   = ["false"]
    }
  }
  statement {
    sid       = "KeysetDocument"
    actions   = ["s3:GetObject", "s3:PutObject"]
    resources = [local.keyset_arn, local.newest_arn]
  }
}

resource "aws_iam_policy" "rotator" {
  name        = "${var.name}-rotator"
  description = "stateseal keyset rotator: data keys under the stateseal KEK, and writes of the keyset document"
  policy      = data.aws_iam_policy_document.rotator.json
}

resource "aws_iam_policy" "server" {
  name        = "${var.name}-server"
  description = "stateseal MCP servers: data keys under the stateseal KEK and the keyset document"
  policy      = data.aws_iam_policy_document.server.json
}
