// Client demultiplexer (spec "Client demultiplexer contract"), shared by the TCP and WSS transports.
//
//   reader thread ──▶ deliver(Response)
//                       ├─ request_uri == /svc/event ─▶ subscription id (body, else X-Subscription-Id)
//                       │     ├─ registered ─▶ that subscription's queue ─▶ its dispatcher thread (serial)
//                       │     └─ not yet     ─▶ buffer (≤ 64 ids, ≤ 1000 events per id, oldest dropped)
//                       └─ uuid of a waiter ─▶ fulfil that request's future
//   stop(reason) ─▶ every waiter fails with TransportDisconnectedError; every callback gets a
//                   client-local {subscription_id, event_type: "__disconnected__"}; buffers discarded.
//
// A callback runs on its subscription's own dispatcher thread, so a slow callback delays only the
// later events of its subscription, never the reader (rule 4).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "svc/wire.h"

namespace svc {

/** An event message (spec/events/message.schema.json) or the client-local __disconnected__. */
using EventCallback = std::function<void(const nlohmann::json &event)>;

inline const char *const DISCONNECTED_EVENT = "__disconnected__";

class Demultiplexer {
public:
    static constexpr size_t MAX_PENDING_SUBSCRIPTIONS = 64;
    static constexpr size_t MAX_PENDING_EVENTS_PER_SUBSCRIPTION = 1000;

    Demultiplexer(size_t maxPendingSubscriptions = MAX_PENDING_SUBSCRIPTIONS,
                  size_t maxPendingEventsPerSubscription = MAX_PENDING_EVENTS_PER_SUBSCRIPTION);
    ~Demultiplexer();
    Demultiplexer(const Demultiplexer &) = delete;
    Demultiplexer &operator=(const Demultiplexer &) = delete;

    /**
     * Registers a request uuid and returns the future of its response. Call it BEFORE writing the
     * request's bytes (rule 2). No timer: the wait ends with the response, cancel() or stop().
     */
    std::future<wire::Response> expect(const std::string &uuid);
    /** Forgets a waiter (its write failed); its future fails with TransportDisconnectedError. */
    void cancel(const std::string &uuid, const std::string &reason);
    /** Routes one incoming Response. Called by the transport's single reader. */
    void deliver(const wire::Response &response);
    /** Attaches a callback and hands it, in order, the events buffered before (rule 6). */
    void registerCallback(const std::string &subscriptionId, EventCallback callback);
    /** Detaches a subscription, discards its buffer; later events for it are dropped. */
    void unregisterCallback(const std::string &subscriptionId);
    /** The transport is gone (rule 5). Idempotent. */
    void stop(const std::string &reason);

    bool stopped() const;
    size_t pendingRequests() const;
    size_t registeredSubscriptions() const;
    size_t bufferedSubscriptions() const;
    size_t bufferedEvents(const std::string &subscriptionId) const;
    /** Events dropped by the buffer caps. */
    size_t droppedEvents() const;
    /** Dispatcher threads not yet joined (registered ones plus removed ones not yet reaped). */
    size_t dispatcherThreads() const;

private:
    struct Slot;
    void deliverEvent(const wire::Response &response);
    void enqueueLocked(const std::shared_ptr<Slot> &slot, nlohmann::json event);

    const size_t m_maxPendingIds;
    const size_t m_maxPendingEvents;
    mutable std::mutex m_mutex;
    std::map<std::string, std::promise<wire::Response>> m_waiters;
    std::map<std::string, std::shared_ptr<Slot>> m_slots;
    std::map<std::string, std::deque<nlohmann::json>> m_pending;
    std::set<std::string> m_forgotten;
    std::deque<std::string> m_forgottenOrder;
    std::list<std::shared_ptr<Slot>> m_allSlots; // joined by the destructor
    bool m_stopped = false;
    std::string m_stopReason;
    size_t m_dropped = 0;
};

} // namespace svc
