"""The ACP surface: the only package that imports the acp SDK.

Import its modules directly; this ``__init__`` stays empty so that importing ``hermes_acp.protocol.stdio`` (the
front door, which must answer ``initialize`` before the SDK is loaded) does not pull the SDK in.
"""
