#include "svc/demux.h"

#include <cctype>

#include "svc/errors.h"

namespace svc {
namespace {

constexpr size_t FORGOTTEN_IDS = 1024;

std::string lower(std::string text) {
    for (auto &c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

nlohmann::json disconnected(const std::string &id) {
    return nlohmann::json{{"subscription_id", id}, {"event_type", DISCONNECTED_EVENT}};
}

} // namespace

/** One registered subscription: its queue and the thread that runs its callback serially. */
struct Demultiplexer::Slot {
    EventCallback callback;
    std::deque<nlohmann::json> queue;
    std::condition_variable wake;
    bool closed = false;
    bool finished = false; // the dispatcher returned: its thread can be joined at once
    std::thread thread;
};

Demultiplexer::Demultiplexer(size_t maxPendingSubscriptions, size_t maxPendingEventsPerSubscription)
    : m_maxPendingIds(maxPendingSubscriptions), m_maxPendingEvents(maxPendingEventsPerSubscription) {}

Demultiplexer::~Demultiplexer() {
    stop("demultiplexer destroyed");
    std::list<std::shared_ptr<Slot>> slots;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (auto &slot : m_allSlots) {
            slot->closed = true;
            slot->wake.notify_all();
        }
        slots.swap(m_allSlots);
    }
    for (auto &slot : slots) {
        if (!slot->thread.joinable()) continue;
        if (slot->thread.get_id() == std::this_thread::get_id()) slot->thread.detach();
        else slot->thread.join();
    }
}

std::future<wire::Response> Demultiplexer::expect(const std::string &uuid) {
    std::lock_guard<std::mutex> lock(m_mutex);
    std::promise<wire::Response> promise;
    auto future = promise.get_future();
    if (m_stopped) {
        promise.set_exception(std::make_exception_ptr(TransportDisconnectedError("transport disconnected: " + m_stopReason)));
        return future;
    }
    if (m_waiters.count(uuid) != 0) throw SvcError("request uuid " + uuid + " is already pending");
    m_waiters.emplace(uuid, std::move(promise));
    return future;
}

void Demultiplexer::cancel(const std::string &uuid, const std::string &reason) {
    std::lock_guard<std::mutex> lock(m_mutex);
    const auto it = m_waiters.find(uuid);
    if (it == m_waiters.end()) return;
    it->second.set_exception(std::make_exception_ptr(TransportDisconnectedError(reason)));
    m_waiters.erase(it);
}

void Demultiplexer::deliver(const wire::Response &response) {
    if (response.request_uri == wire::EVENT_REQUEST_URI) {
        deliverEvent(response);
        return;
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stopped) return;
    const auto it = m_waiters.find(response.uuid);
    if (it == m_waiters.end()) return; // a late answer to a cancelled request
    it->second.set_value(response);
    m_waiters.erase(it);
}

void Demultiplexer::deliverEvent(const wire::Response &response) {
    auto event = nlohmann::json::parse(response.body, nullptr, false);
    if (!event.is_object()) return; // not an event body: nothing to route
    std::string id;
    const auto field = event.find("subscription_id");
    if (field != event.end() && field->is_string()) id = field->get<std::string>();
    else {
        for (const auto &[name, value] : response.headers)
            if (lower(name) == "x-subscription-id") id = value;
        if (id.empty()) return;
        event["subscription_id"] = id;
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stopped) return;
    const auto slot = m_slots.find(id);
    if (slot != m_slots.end()) {
        enqueueLocked(slot->second, std::move(event));
        return;
    }
    if (m_forgotten.count(id) != 0) return;
    auto buffer = m_pending.find(id);
    if (buffer == m_pending.end()) {
        if (m_pending.size() >= m_maxPendingIds) {
            ++m_dropped;
            return;
        }
        buffer = m_pending.emplace(id, std::deque<nlohmann::json>{}).first;
    }
    buffer->second.push_back(std::move(event));
    if (buffer->second.size() > m_maxPendingEvents) {
        buffer->second.pop_front();
        ++m_dropped;
    }
}

void Demultiplexer::enqueueLocked(const std::shared_ptr<Slot> &slot, nlohmann::json event) {
    slot->queue.push_back(std::move(event));
    slot->wake.notify_one();
}

void Demultiplexer::registerCallback(const std::string &subscriptionId, EventCallback callback) {
    auto slot = std::make_shared<Slot>();
    slot->callback = std::move(callback);
    std::list<std::shared_ptr<Slot>> finished; // dispatchers of removed subscriptions that returned
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_slots.count(subscriptionId) != 0) throw SvcError("subscription " + subscriptionId + " is already registered");
    for (auto it = m_allSlots.begin(); it != m_allSlots.end();)
        if ((*it)->finished) finished.splice(finished.end(), m_allSlots, it++);
        else ++it;
    m_slots[subscriptionId] = slot;
    m_allSlots.push_back(slot);
    m_forgotten.erase(subscriptionId);
    if (m_stopped) enqueueLocked(slot, disconnected(subscriptionId));
    else {
        const auto buffered = m_pending.find(subscriptionId);
        if (buffered != m_pending.end()) {
            for (auto &event : buffered->second) enqueueLocked(slot, std::move(event));
            m_pending.erase(buffered);
        }
    }
    // They set `finished` under this lock and only return after it: joining them does not wait.
    for (auto &done : finished) done->thread.join();
    // The dispatcher: one event at a time, in arrival order, outside the lock.
    slot->thread = std::thread([this, raw = slot.get()] {
        std::unique_lock<std::mutex> guard(m_mutex);
        for (;;) {
            raw->wake.wait(guard, [raw] { return raw->closed || !raw->queue.empty(); });
            if (raw->queue.empty()) { // closed and drained
                raw->finished = true;
                return;
            }
            auto event = std::move(raw->queue.front());
            raw->queue.pop_front();
            guard.unlock();
            try {
                raw->callback(event);
            } catch (...) {
                // a callback's own failure is its business; the subscription goes on
            }
            guard.lock();
        }
    });
}

void Demultiplexer::unregisterCallback(const std::string &subscriptionId) {
    std::lock_guard<std::mutex> lock(m_mutex);
    const auto slot = m_slots.find(subscriptionId);
    if (slot != m_slots.end()) {
        slot->second->closed = true;
        slot->second->queue.clear();
        slot->second->wake.notify_all();
        m_slots.erase(slot);
    }
    m_pending.erase(subscriptionId);
    if (m_forgotten.insert(subscriptionId).second) m_forgottenOrder.push_back(subscriptionId);
    if (m_forgottenOrder.size() > FORGOTTEN_IDS) {
        m_forgotten.erase(m_forgottenOrder.front());
        m_forgottenOrder.pop_front();
    }
}

void Demultiplexer::stop(const std::string &reason) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stopped) return;
    m_stopped = true;
    m_stopReason = reason;
    m_pending.clear();
    for (auto &[uuid, promise] : m_waiters)
        promise.set_exception(std::make_exception_ptr(TransportDisconnectedError("transport disconnected: " + reason)));
    m_waiters.clear();
    for (auto &[id, slot] : m_slots) enqueueLocked(slot, disconnected(id));
}

bool Demultiplexer::stopped() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_stopped;
}
size_t Demultiplexer::pendingRequests() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_waiters.size();
}
size_t Demultiplexer::registeredSubscriptions() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_slots.size();
}
size_t Demultiplexer::bufferedSubscriptions() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_pending.size();
}
size_t Demultiplexer::bufferedEvents(const std::string &subscriptionId) const {
    std::lock_guard<std::mutex> lock(m_mutex);
    const auto it = m_pending.find(subscriptionId);
    return it == m_pending.end() ? 0 : it->second.size();
}
size_t Demultiplexer::dispatcherThreads() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_allSlots.size();
}
size_t Demultiplexer::droppedEvents() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_dropped;
}

} // namespace svc
