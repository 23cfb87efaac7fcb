import Foundation
import PortariaCore

/// `POST/GET /v1/devices`, `DELETE /v1/devices/{id}` (permission `devices.manage`).
struct DeviceRoutes {
    let store: DeviceStore
    let authenticator: Authenticator
    var webPushHosts = WebPushHosts.browsers

    func register(on router: Router) {
        let hosts = webPushHosts
        router.add(APIRoutes.registerDevice) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.devicesManage)
            let registration = try DeviceValidation.decode(request, webPushHosts: hosts)
            // A person's device, not the company's: every company the person belongs to sees it.
            var audit = AuditLog.entry(caller, "device.register", objectType: "device", objectID: nil,
                                       detail: ["platform": .string(registration.platform)], at: Date())
            audit.companyID = nil
            let (device, created) = try await store.register(userID: caller.user.id, registration, audit: audit)
            return .json(device.view, status: created ? 201 : 200)
        }
        router.add(APIRoutes.devices) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.devicesManage)
            return .json(DeviceList(devices: try await store.devices(userID: caller.user.id).map(\.view)))
        }
        router.add(APIRoutes.deleteDevice) { request in
            let caller = try await authenticator.caller(request, requiring: Permission.devicesManage)
            // Another user's device answers exactly like a device that does not exist.
            guard let id = DeviceID(rawValue: try request.parameter("id").lowercased()),
                  try await store.delete(id: id, userID: caller.user.id,
                                         audit: { var entry = AuditLog.entry(caller, "device.remove", objectType: "device",
                                                                             objectID: id.rawValue, at: Date())
                                                  entry.companyID = nil
                                                  return entry }()) else {
                throw HTTPError.notFound("device not found")
            }
            return .noContent()
        }
    }
}
