import Testing
import PortariaCore

@Suite("Permission tree")
struct PermissionsTests {
    @Test("granting a node grants its children")
    func expandsChildren() {
        let effective = Permissions.effective(user: ["visits"], sectors: [])
        #expect(effective == ["visits", "visits.view", "visits.resolve"])
    }

    @Test("a child does not grant its parent or siblings")
    func childOnly() {
        let effective = Permissions.effective(user: ["visits.view"], sectors: [])
        #expect(effective == ["visits.view"])
        #expect(!effective.contains("visits.resolve"))
    }

    @Test("user grants and every sector's grants are united")
    func unionOfUserAndSectors() {
        let effective = Permissions.effective(user: ["devices.manage"], sectors: [["operator"], ["admin.users"]])
        #expect(effective == ["devices.manage", "operator", "operator.console", "admin.users"])
    }

    @Test("unknown ids are dropped, never widened")
    func unknownDropped() {
        #expect(Permissions.effective(user: ["superuser", "visits.view.all", ""], sectors: [["*"]]).isEmpty)
    }

    @Test("the catalogue holds every node named in the tree")
    func catalogue() {
        for (parent, children) in Permission.tree {
            #expect(Permission.isKnown(parent))
            for child in children { #expect(Permission.isKnown(child)) }
        }
        #expect(Permission.catalogue.count == 12)
    }

    @Test("profile: admin rights win, then operator, else resident",
          arguments: [
            (["admin"], Profile.admin), (["admin.push_health"], .admin), (["operator", "visits"], .operator),
            (["operator.console"], .operator), (["visits", "units.settings"], .resident), ([], .resident),
          ] as [([String], Profile)])
    func profile(grants: [String], expected: Profile) {
        #expect(Profile.decide(permissions: Permissions.effective(user: grants, sectors: [])) == expected)
    }

    @Test("a company grant resolves the same on client and server")
    func companyGrantResolution() {
        let grant = CompanyGrant(id: "c", name: "Residencial Demo", permissions: ["devices.manage"],
                                 sectors: [SectorGrant(id: "s", name: "Moradores", permissions: ["visits"])])
        #expect(grant.effectivePermissions == ["devices.manage", "visits", "visits.view", "visits.resolve"])
    }
}
