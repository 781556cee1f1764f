"""servekit.allowed_hosts: which Host names a server answers to (DNS rebinding)."""

from __future__ import annotations

import pytest

from servekit.allowed_hosts import HostPolicy, host_name, parse_allowed_hosts

LOCAL = HostPolicy()


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "LOCALHOST.",
        "app.localhost:3000",
        "127.0.0.1:8000",
        "10.1.2.3",
        "[::1]:8000",
        "[fe80::1]",
        "0.0.0.0:9",
    ],
)
def test_loopback_names_and_ip_addresses_are_answered_with_no_names_given(host: str):
    assert LOCAL.allows(host)


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:8000",
        "127.0.0.1.attacker.example",
        "localhost.attacker.example",
        "notlocalhost",
        "",
        "[not-an-address]",
    ],
)
def test_any_other_name_is_refused_with_no_names_given(host: str):
    assert not LOCAL.allows(host)


def test_a_name_given_is_answered_with_any_port_and_case():
    policy = HostPolicy.of(["box.lan"])
    assert policy.allows("Box.LAN:8100")
    assert not policy.allows("other.lan")


def test_a_leading_dot_answers_the_domain_and_every_name_under_it():
    policy = HostPolicy.of([".docker.internal"])
    assert policy.allows("host.docker.internal:8100")
    assert policy.allows("docker.internal")
    assert not policy.allows("xdocker.internal")


def test_the_name_the_server_was_bound_to_is_answered():
    assert HostPolicy.of([], bound="mybox.lan").allows("mybox.lan:8000")


def test_a_star_answers_any_name():
    assert HostPolicy.of(["*"]).allows("anything.example")


def test_the_refusal_names_the_host_and_how_to_allow_it():
    message = LOCAL.refusal("Evil.Example:8000")
    assert "'evil.example'" in message
    assert "--allowed-hosts evil.example" in message
    assert "SG_ALLOWED_HOSTS=evil.example" in message


@pytest.mark.parametrize(
    ("header", "name"),
    [("a.b:80", "a.b"), ("a.b.", "a.b"), ("[::1]:80", "::1"), ("::1", "::1"), ("A", "a")],
)
def test_a_host_headers_name_has_no_port_brackets_or_trailing_dot(header: str, name: str):
    assert host_name(header) == name


def test_allowed_hosts_are_read_comma_or_space_separated():
    assert parse_allowed_hosts(" box.lan, .docker.internal  10.0.0.2 ,") == (
        "box.lan",
        ".docker.internal",
        "10.0.0.2",
    )


@pytest.mark.parametrize("bad", ["http://box.lan", "box.lan:80", "a/b", "-bad-", "."])
def test_an_allowed_host_that_is_not_a_name_is_an_error_naming_it(bad: str):
    with pytest.raises(ValueError, match=r"allowed hosts: .* is not a host name"):
        parse_allowed_hosts(bad)
