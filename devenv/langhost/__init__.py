"""The project's Pulumi language host for Python programs and plugins.

The Go module of Pulumi's own Python language host is not served by the module
proxy this project builds from, so the toolchain ships this host instead: a
gRPC server implementing the CLI's LanguageRuntime service. It runs programs
with the Python SDK's executor, runs Python plugins (policy packs), and turns
the PCL that `pulumi import` sends into Python code.
"""
