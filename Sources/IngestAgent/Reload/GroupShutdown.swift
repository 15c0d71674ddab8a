import EdgeIngestCore
import ServiceLifecycle

/// Lets a service of a group start that group's graceful shutdown (the
/// group is made after its services, so it is attached once it exists).
final class GroupShutdown: Sendable {
    private let group = PlainMutex<ServiceGroup?>(nil)

    func attach(_ group: ServiceGroup) { self.group.withLock { $0 = group } }

    func trigger() async {
        guard let group = group.withLock({ $0 }) else { return }
        await group.triggerGracefulShutdown()
    }
}
