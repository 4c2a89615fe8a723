"""The MCP SDK releases the package supports: stated in its metadata, checked at import."""

from importlib import metadata

import pytest

import stateseal


def test_the_metadata_states_the_range_the_import_checks():
    extra = [r for r in metadata.requires("stateseal") or [] if r.startswith("mcp") and "extra" in r]
    assert len(extra) == 1, extra
    spec = extra[0].split(";")[0].removeprefix("mcp").strip()
    assert sorted(spec.split(",")) == sorted(stateseal.MCP_SUPPORTED.split(",")), (spec, stateseal.MCP_SUPPORTED)


def test_the_installed_sdk_is_in_range():
    release = stateseal._mcp_release(metadata.version("mcp"))
    assert release is not None
    assert stateseal.MCP_OLDEST <= release < stateseal.MCP_FIRST_UNSUPPORTED


@pytest.mark.parametrize("version", ["2.0.0", "2.1.1", "2.3.0", "2.3.0.post1"])
def test_supported_releases_pass(monkeypatch, version):
    monkeypatch.setattr(stateseal.metadata, "version", lambda name: version)
    stateseal._check_mcp()


@pytest.mark.parametrize("version", ["1.30.0", "2.4.0", "2.4", "3.0.0", "2.0.0rc1", "2.3.0.dev1", "garbage"])
def test_other_releases_are_refused_with_what_to_install(monkeypatch, version):
    monkeypatch.setattr(stateseal.metadata, "version", lambda name: version)
    with pytest.raises(ImportError) as refused:
        stateseal._check_mcp()
    message = str(refused.value)
    assert f"mcp {version} is installed" in message
    assert "pip install 'mcp>=2.0.0,<2.4'" in message
