# What an MCP server needs, and nothing else: generate and decrypt data keys
# under this key with stateseal's encryption context, and read and write the
# keyset object and the copy of the newest document beside it (writes are
# conditional; S3 enforces If-Match).

data "aws_iam_policy_document" "server" {
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

resource "aws_iam_policy" "server" {
  name        = "${var.name}-server"
  description = "stateseal MCP servers: data keys under the stateseal KEK and the keyset document"
  policy      = data.aws_iam_policy_document.server.json
}
