"""``authenticate`` with ``hermes-setup-form``: the in-editor setup, its forms tied to that request (ACP's request
scope, since no session may exist yet). Success answers ``{}`` (the client may go on); a setup that stopped answers
auth_required with what the user needs to know (cancelled, the key variable missing, the test request refused) as
the whole message, without the "Authentication required:" the boundary puts before a provider's own refusal.
A client that did not advertise ``elicitation.form`` is told to use the terminal method."""

from __future__ import annotations

from hermes_acp.errors import InvalidParamsError
from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import RequestContext
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry

from .client_bridge import AcpClientBridge
from .errors import AUTH_REQUIRED
from .initialize import FORM_SETUP_METHOD_ID, SETUP_METHOD_ID

__all__ = ["setup_in_editor"]


async def setup_in_editor(
    ctx: RequestContext, bridge: AcpClientBridge, registry: ProviderRegistry, catalog: ModelCatalog
) -> str:
    """Run the setup; the new default model's id, or raises auth_required saying why there is none."""
    elicitor = bridge.request_elicitor(ctx.request_id)
    if elicitor is None:
        raise InvalidParamsError(
            f"methodId: {FORM_SETUP_METHOD_ID!r} needs a client that shows forms (elicitation.form);"
            f" use {SETUP_METHOD_ID!r} (a terminal)",
            field="methodId",
        )
    from hermes_acp.onboarding.flow import SetupDone, run_setup_form  # loaded with the first setup

    result = await run_setup_form(elicitor, registry, catalog)
    if not isinstance(result, SetupDone):
        raise ClientRequestError(
            AUTH_REQUIRED, result.describe(), {"setup": "cancelled" if result.cancelled else "stopped"}
        )
    return result.model_id
