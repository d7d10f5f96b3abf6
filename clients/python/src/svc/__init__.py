"""svc client: App Mesh 3.0's Python API under the svc name.

from svc import SvcClient
client = SvcClient("https://127.0.0.1:6060", ssl_verify="/path/ca.pem", bearer_token=token)
print(client.list_apps())
"""

from .app import App, AppOutput, AppRun, OutputHandler, print_output_handler
from .client_http import SubscriptionResult, SvcClient, SvcResponse
from .client_persistent import SvcClientTCP, SvcClientWSS
from .cluster import (
    ClusterNode,
    ClusterNodeResource,
    ClusterPlacement,
    ClusterTask,
    ClusterTaskView,
    ClusterTopologyEntry,
)
from .demux import EVENT_TYPE_DISCONNECTED, AppEvent, EventCallback
from .errors import (
    ERROR_CLASSES,
    SvcAppNotFoundError,
    SvcAppRemovedError,
    SvcAuthError,
    SvcConnectionError,
    SvcError,
    SvcForbiddenError,
    SvcNotFoundError,
    SvcPersistentConnectionRequiredError,
    SvcProcessSupersededError,
    SvcRequestError,
    SvcTimeoutError,
    SvcUnauthorizedError,
    SvcWorkerRejectedError,
)
from .oauth import OAuthClient, OAuthError
from .token_provider import StaticAccessTokenProvider, TokenProvider
from .worker import SvcWorker, SvcWorkerTCP, SvcWorkerWSS

__all__ = [
    "ERROR_CLASSES",
    "EVENT_TYPE_DISCONNECTED",
    "App",
    "AppEvent",
    "AppOutput",
    "AppRun",
    "ClusterNode",
    "ClusterNodeResource",
    "ClusterPlacement",
    "ClusterTask",
    "ClusterTaskView",
    "ClusterTopologyEntry",
    "EventCallback",
    "OAuthClient",
    "OAuthError",
    "OutputHandler",
    "StaticAccessTokenProvider",
    "SubscriptionResult",
    "SvcAppNotFoundError",
    "SvcAppRemovedError",
    "SvcAuthError",
    "SvcClient",
    "SvcClientTCP",
    "SvcClientWSS",
    "SvcConnectionError",
    "SvcError",
    "SvcForbiddenError",
    "SvcNotFoundError",
    "SvcPersistentConnectionRequiredError",
    "SvcProcessSupersededError",
    "SvcRequestError",
    "SvcResponse",
    "SvcTimeoutError",
    "SvcUnauthorizedError",
    "SvcWorker",
    "SvcWorkerRejectedError",
    "SvcWorkerTCP",
    "SvcWorkerWSS",
    "TokenProvider",
    "print_output_handler",
]
