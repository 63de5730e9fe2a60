"""Stubs generated at build time from proto/jobwire/v1/broker.proto.

``broker_pb2`` and ``broker_pb2_grpc`` are written here by the package build
(setup.py runs grpcio-tools); they are not part of the source tree.
"""
